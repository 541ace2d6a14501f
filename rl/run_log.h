// The run directory's logs: JSONL files appended and flushed line by line (so a crash loses at most the
// line being written), and the one-line progress reports on the terminal.
#pragma once
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

namespace gtpo::rl {

class JsonlLog {
 public:
  JsonlLog() = default;
  // Opens path for appending; with truncate_after_step >= 0 first drops lines whose "step" is larger
  // (a resumed run rewrites history after its checkpoint).
  JsonlLog(const std::string& path, int64_t truncate_after_step = -1);
  ~JsonlLog();
  JsonlLog(const JsonlLog&) = delete;
  JsonlLog& operator=(const JsonlLog&) = delete;
  JsonlLog(JsonlLog&& other) noexcept;
  JsonlLog& operator=(JsonlLog&& other) noexcept;

  void write(const nlohmann::json& line);

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

// "1.23k"-style compact numbers for progress lines.
std::string compact(double value);

}  // namespace gtpo::rl
