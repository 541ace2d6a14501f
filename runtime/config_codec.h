// The one way a config value is read from text and printed back, for every section of every config
// (run configs, model sections, task options, `gtpo advantages` keys, command-line flags). A Codec knows
// its type's name ("integer >= 0", "true|false", "a|b|c") so errors and docs say the same thing.
// Header-only, so that data/ can use it without linking the runtime.
#pragma once
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "runtime/error.h"

namespace gtpo::config {

template <typename T>
struct Codec {
  std::string type;                                 // for docs and errors
  std::function<T(const std::string&)> parse;       // throws gtpo::Error "expected TYPE, got 'VALUE'"
  std::function<std::string(const T&)> print;       // text that parse reads back to the same value
  bool quoted = false;                              // free text: double-quoted when written as YAML
};

[[noreturn]] inline void expected(const std::string& type, const std::string& value) {
  fail("expected ", type, ", got '", value, "'");
}

// " (did you mean 'X'?)" for the candidate nearest WORD by edit distance (insertions, deletions,
// substitutions and swaps of neighbours count 1), when it is near enough to be a typo (at most a third of
// the word's length, at least 1, and not the whole word); else "".
inline std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const auto distance = [](const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] =
            std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  const size_t limit = std::max<size_t>(1, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = distance(word, c);
    if (d < best_distance && d < std::max(word.size(), c.size())) best = c, best_distance = d;
  }
  return best.empty() ? "" : " (did you mean '" + best + "'?)";
}

// "a, b, c".
inline std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) {
    if (!out.empty()) out += sep;
    out += s;
  }
  return out;
}

// Shortest text that reads back as the same double: "0.001", not "0.0010000000000000000208".
inline std::string format_double(double v) {
  char buf[32];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

// An integer in [lo, hi]; the upper bound is left out of the type text when it is the type's maximum.
template <typename T = int64_t>
Codec<T> integer(T lo, T hi = std::numeric_limits<T>::max()) {
  std::string type = "integer";
  if (hi < std::numeric_limits<T>::max())
    type += " in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  else if (lo > std::numeric_limits<T>::lowest() || std::is_unsigned_v<T>)
    type += " >= " + std::to_string(lo);
  return {type,
          [=](const std::string& v) {
            T x{};
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
            if (v.empty() || ec != std::errc() || end != v.data() + v.size() || x < lo || x > hi) expected(type, v);
            return x;
          },
          [](const T& x) { return std::to_string(x); }};
}

// A finite number in a range; an infinite bound is left out of the type text.
inline Codec<double> number(double lo = -std::numeric_limits<double>::infinity(),
                            double hi = std::numeric_limits<double>::infinity(), bool lo_open = false,
                            bool hi_open = false) {
  const double inf = std::numeric_limits<double>::infinity();
  std::string type = "number";
  if (lo > -inf && hi < inf) {
    type += std::string(" in ") + (lo_open ? "(" : "[") + format_double(lo) + ", " + format_double(hi) +
            (hi_open ? ")" : "]");
  } else if (lo > -inf) {
    type += std::string(lo_open ? " > " : " >= ") + format_double(lo);
  }
  return {type,
          [=](const std::string& v) {
            double x = 0;
            const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
            const bool ok = !v.empty() && ec == std::errc() && end == v.data() + v.size() && std::isfinite(x) &&
                            (lo_open ? x > lo : x >= lo) && (hi_open ? x < hi : x <= hi);
            if (!ok) expected(type, v);
            return x;
          },
          [](const double& x) { return format_double(x); }};
}

// Every boolean of every section is spelled alike: true/false, on/off, yes/no, 1/0, in any case (YAML and
// Hugging Face JSON write True/true).
inline bool parse_bool(const std::string& v) {
  std::string lower = v;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower == "true" || lower == "on" || lower == "yes" || lower == "1") return true;
  if (lower == "false" || lower == "off" || lower == "no" || lower == "0") return false;
  fail("expected true or false, got '", v, "' (on/off, yes/no and 1/0 work too)");
}

inline Codec<bool> boolean() {
  return {"bool", [](const std::string& v) { return parse_bool(v); },
          [](const bool& x) { return std::string(x ? "true" : "false"); }};
}

inline Codec<std::string> text() {
  return {"string", [](const std::string& v) { return v; }, [](const std::string& x) { return x; }, true};
}

// One of a fixed set of words.
template <typename E>
Codec<E> choice(std::vector<std::pair<std::string, E>> choices) {
  std::vector<std::string> words;
  for (const auto& c : choices) words.push_back(c.first);
  const std::string type = join(words, "|");
  return {type,
          [=](const std::string& v) {
            for (const auto& [w, e] : choices)
              if (v == w) return e;
            fail("expected one of ", type, ", got '", v, "'");
          },
          [=](const E& x) {
            for (const auto& [w, e] : choices)
              if (x == e) return w;
            return std::string("?");
          }};
}

// One settable key of some config struct TARGET: the row a schema is made of. SECTION.NAME is how files,
// the command line and the docs spell it.
template <typename Target>
struct Key {
  std::string section;
  std::string name;
  std::string type;
  std::string meaning;
  std::function<void(Target&, const std::string&)> set;  // throws "expected TYPE, got 'VALUE'"
  std::function<std::string(const Target&)> get;
  bool quoted = false;
  // The default as the docs show it when it is not the value of a default-constructed TARGET (derived
  // defaults: "4·hidden_size", "required", ...).
  std::string default_doc = {};
  // A row of the items of a list-valued key: NAME is "LIST[].FIELD" (reward.functions[].weight), the file
  // gives "LIST[INDEX].FIELD" (the YAML reader flattens a list of mappings so), and these act on item INDEX
  // instead of set/get, which stay empty. set_item grows the list to INDEX + 1 items.
  std::function<void(Target&, std::size_t, const std::string&)> set_item = {};
  std::function<std::string(const Target&, std::size_t)> get_item = {};
  std::function<std::size_t(const Target&)> count = {};

  std::string dotted() const { return section + "." + name; }
  bool is_item() const { return static_cast<bool>(set_item); }
  // "functions" of "functions[].weight"; empty for a plain row.
  std::string list() const { return is_item() ? name.substr(0, name.find("[]")) : std::string(); }
  // "weight" of "functions[].weight".
  std::string item_field() const { return is_item() ? name.substr(name.find("[].") + 3) : name; }
};

// A row over one member of TARGET (or of a member of it) read with CODEC.
template <typename Target, typename T>
Key<Target> field(std::string section, std::string name, T Target::*member, const Codec<T>& codec,
                  std::string meaning) {
  return {std::move(section), std::move(name), codec.type, std::move(meaning),
          [=](Target& c, const std::string& v) { c.*member = codec.parse(v); },
          [=](const Target& c) { return codec.print(c.*member); }, codec.quoted};
}
template <typename Target, typename Sub, typename T>
Key<Target> field(std::string section, std::string name, Sub Target::*sub, T Sub::*member, const Codec<T>& codec,
                  std::string meaning) {
  return {std::move(section), std::move(name), codec.type, std::move(meaning),
          [=](Target& c, const std::string& v) { (c.*sub).*member = codec.parse(v); },
          [=](const Target& c) { return codec.print((c.*sub).*member); }, codec.quoted};
}

// A row over member MEMBER of every item of the list SUB.*ITEMS: "LIST[].NAME" of SECTION.
template <typename Target, typename Sub, typename Item, typename T>
Key<Target> item_field(std::string section, const std::string& list, const std::string& name, Sub Target::*sub,
                       std::vector<Item> Sub::*items, T Item::*member, const Codec<T>& codec, std::string meaning) {
  Key<Target> k{std::move(section), list + "[]." + name, codec.type, std::move(meaning), {}, {}, codec.quoted};
  k.set_item = [=](Target& c, std::size_t i, const std::string& v) {
    std::vector<Item>& all = (c.*sub).*items;
    if (all.size() <= i) all.resize(i + 1);
    all[i].*member = codec.parse(v);
  };
  k.get_item = [=](const Target& c, std::size_t i) { return codec.print(((c.*sub).*items)[i].*member); };
  k.count = [=](const Target& c) { return ((c.*sub).*items).size(); };
  return k;
}

// "functions[2].weight" as ("functions", 2, "weight"); false when KEY is not an item key.
inline bool split_item_key(const std::string& key, std::string& list, std::size_t& index, std::string& field) {
  const auto open = key.find('[');
  const auto close = key.find("].", open == std::string::npos ? 0 : open);
  if (open == std::string::npos || open == 0 || close == std::string::npos || close == open + 1) return false;
  std::size_t i = 0;
  const auto [end, ec] = std::from_chars(key.data() + open + 1, key.data() + close, i);
  if (ec != std::errc() || end != key.data() + close || close + 2 >= key.size()) return false;
  list = key.substr(0, open);
  index = i;
  field = key.substr(close + 2);
  return true;
}

// The rows of an inner struct re-targeted at the struct that holds it (model rows into a run config).
template <typename Outer, typename Inner>
Key<Outer> lift(const Key<Inner>& k, Inner Outer::*member) {
  return {k.section, k.name, k.type, k.meaning, [=](Outer& o, const std::string& v) { k.set(o.*member, v); },
          [=](const Outer& o) { return k.get(o.*member); }, k.quoted, k.default_doc};
}

}  // namespace gtpo::config
