// The values a chat template computes with: a small variant mirroring the Python objects jinja2 sees
// (None, bool, int, float, str, list/tuple, dict, namespace, callable) plus jinja2's Undefined.
// Lists and dicts are shared and immutable once built (transformers renders in an immutable sandbox);
// a namespace is shared and mutable ({% set ns.x = ... %} is visible through every reference).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace gtpo::data::chat {

struct Value;
struct ListData;
struct DictData;
struct CallArgs;

// A function callable from a template: a global (range, namespace, raise_exception), a macro or a
// bound method ("text".strip). It receives evaluated arguments and the line of the call (for errors).
using Function = std::function<Value(CallArgs&, int line)>;

struct Value {
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  Kind kind = Kind::Undefined;
  bool boolean = false;
  int64_t integer = 0;
  double number = 0;
  std::string text;                     // String; for Undefined the name that was missing (messages)
  std::shared_ptr<const ListData> list; // List (also tuples)
  std::shared_ptr<DictData> dict;       // Dict (immutable by convention) and Namespace (mutable)
  std::shared_ptr<const Function> function;

  static Value undefined(std::string name = "") { Value v; v.text = std::move(name); return v; }
  static Value none() { Value v; v.kind = Kind::None; return v; }
  static Value from_bool(bool b) { Value v; v.kind = Kind::Bool; v.boolean = b; return v; }
  static Value from_int(int64_t i) { Value v; v.kind = Kind::Int; v.integer = i; return v; }
  static Value from_float(double d) { Value v; v.kind = Kind::Float; v.number = d; return v; }
  static Value from_string(std::string s) { Value v; v.kind = Kind::String; v.text = std::move(s); return v; }
  static Value from_list(std::vector<Value> items, bool tuple = false);
  static Value from_dict(std::vector<std::pair<std::string, Value>> items);
  static Value new_namespace(std::vector<std::pair<std::string, Value>> items);
  static Value from_function(Function f);

  bool is_undefined() const { return kind == Kind::Undefined; }
  bool is_none() const { return kind == Kind::None; }
  bool is_string() const { return kind == Kind::String; }
  bool is_number() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  const std::vector<Value>& items() const;  // List only
  std::size_t depth() const;                // nesting depth of lists/dicts (1 for scalars)
};

struct ListData {
  std::vector<Value> items;
  bool tuple = false;
  std::size_t depth = 1;
};

// Insertion-ordered string-keyed map (Python dicts keep insertion order; tojson prints in it).
struct DictData {
  std::vector<std::pair<std::string, Value>> entries;
  bool is_namespace = false;
  std::size_t depth = 1;
  const Value* find(const std::string& key) const;
  void set(const std::string& key, Value v);
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The Nth positional argument or the keyword NAME, whichever is given; nullptr when neither is.
  const Value* get(std::size_t index, const std::string& name) const;
};

// Lists and dicts deeper than this are refused (a template building [[[...]]] in a loop must not be able
// to overflow the stack of the recursive printers).
inline constexpr std::size_t kMaxValueDepth = 256;

}  // namespace gtpo::data::chat
