// The run directory's logs: JSONL files appended and flushed line by line (so a crash loses at most the
// line being written), and the one-line progress reports on the terminal.
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/error.h"

namespace gtpo::rl {

// A log line that could not be written (a full disk, a quota, a file-size limit): the run stops with it.
class LogWriteError : public Error {
 public:
  using Error::Error;
};

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

  // Appends LINE and flushes it; a short write or a failed flush is a LogWriteError naming the file and the
  // OS reason (a run must not train on while its metrics silently stopped).
  void write(const nlohmann::json& line);

 private:
  std::FILE* file_ = nullptr;
  std::string path_;
};

// "1.23k"-style compact numbers for progress lines.
std::string compact(double value);

}  // namespace gtpo::rl
