// The page: the static template (rl/report/report_template.html, compiled in as a string by CMake) with the
// runs' JSON in place of its placeholder.
#include "rl/report/report_template.h"  // generated: kReportTemplate
#include "rl/report/run_report.h"
#include "runtime/error.h"

namespace gtpo::rl {

std::string render_report_html(const std::vector<nlohmann::json>& runs) {
  static constexpr std::string_view kPlaceholder = "/*GTPO_DATA*/null";
  const std::string_view page = kReportTemplate;
  const std::size_t at = page.find(kPlaceholder);
  GTPO_CHECK(at != std::string_view::npos, "report: the built-in template lost its data placeholder");
  // Model text can hold invalid UTF-8 (byte tokenizers): replaced by U+FFFD. "</" is escaped so that no string
  // in the data can end the <script> element ("<\/" is the same JSON string).
  std::string data = nlohmann::json({{"runs", runs}}).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    safe += data[i];
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/') safe += '\\';
  }
  std::string html;
  html.reserve(page.size() + safe.size());
  html.append(page.substr(0, at)).append(safe).append(page.substr(at + kPlaceholder.size()));
  return html;
}

}  // namespace gtpo::rl
