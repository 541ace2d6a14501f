// Headless Chromium for the report tests: find it, and dump a report page's DOM after its script ran
// (report.html#selftest: the page hovers a chart and a token itself and marks the body with the outcome).
#pragma once
#include <array>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/io/atomic_file.h"

namespace gtpo::testing {

// The headless browser: $GTPO_CHROMIUM, else chromium on PATH. Empty when there is none.
inline std::string find_chromium() {
  if (const char* env = std::getenv("GTPO_CHROMIUM"); env && *env) return env;
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');)
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"})
      if (!d.empty() && std::filesystem::exists(std::filesystem::path(d) / name))
        return (std::filesystem::path(d) / name).string();
  return "";
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline constexpr const char* kChromiumFlags =
    " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --hide-scrollbars"
    " --virtual-time-budget=10000";

// The DOM of HTML#selftest (with HASH_MORE after it, e.g. "&mode=entropy") after its script ran in headless
// Chromium; LOG gets Chromium's stderr. WORK holds the browser profile.
inline std::string selftest_dom(const std::string& chromium, const std::string& html, const std::string& work,
                                std::string& log, const std::string& hash_more = "") {
  const std::string dom_file = work + "/dom.html", log_file = work + "/chromium.log";
  const std::string dump =
      "timeout 180 " + shell_quote(chromium) + kChromiumFlags +
      " --user-data-dir=" + shell_quote(work + "/chromium-profile") +
      " --enable-logging=stderr --v=0 --dump-dom " +
      shell_quote("file://" + std::filesystem::absolute(html).string() + "#selftest" + hash_more) + " > " +
      shell_quote(dom_file) + " 2> " + shell_quote(log_file);
  INFO(dump);
  REQUIRE(std::system(dump.c_str()) == 0);
  log = io::read_file(log_file);
  return io::read_file(dom_file);
}

// The background colour (r, g, b, alpha) of every token span of the per-token view in DOM, in page order.
inline std::vector<std::array<double, 4>> token_colours(const std::string& dom) {
  const std::size_t group = dom.find("id=\"token-group\"");
  REQUIRE(group != std::string::npos);
  const std::regex span(
      R"(<span class="tok[^"]*"[^>]* style="[^"]*background: rgba\((\d+), (\d+), (\d+), ([0-9.]+)\))");
  std::vector<std::array<double, 4>> out;
  for (std::sregex_iterator it(dom.begin() + static_cast<std::ptrdiff_t>(group), dom.end(), span), end;
       it != end; ++it)
    out.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]), std::stod((*it)[4])});
  return out;
}

}  // namespace gtpo::testing
