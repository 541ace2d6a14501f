#include "rl/run/run_log.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/json_parse.h"

namespace gtpo::rl {

JsonlLog::JsonlLog(const std::string& path, int64_t truncate_after_step) : path_(path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) io::make_directories(parent.string(), "log directory");
  if (truncate_after_step >= 0 && std::filesystem::exists(path)) {
    std::istringstream in(io::read_file(path));
    std::string line, kept;
    while (std::getline(in, line)) {
      if (line.empty()) continue;
      try {
        nlohmann::json j = io::parse_json(line);
        if (j.contains("step") && j["step"].is_number_integer() &&
            j["step"].get<int64_t>() > truncate_after_step)
          continue;
      } catch (const nlohmann::json::exception&) {
        continue;  // a line cut short by a crash
      }
      kept += line + "\n";
    }
    io::write_file_atomic(path, kept);
  }
  file_ = std::fopen(path.c_str(), "a");
  GTPO_CHECK(file_ != nullptr, "cannot open ", path, " for appending");
}

JsonlLog::~JsonlLog() {
  if (file_) std::fclose(file_);
}

JsonlLog::JsonlLog(JsonlLog&& other) noexcept : file_(other.file_), path_(std::move(other.path_)) {
  other.file_ = nullptr;
}

JsonlLog& JsonlLog::operator=(JsonlLog&& other) noexcept {
  if (this != &other) {
    if (file_) std::fclose(file_);
    file_ = other.file_;
    path_ = std::move(other.path_);
    other.file_ = nullptr;
  }
  return *this;
}

void JsonlLog::write(const nlohmann::json& line) {
  if (!file_) return;
  // Model text can hold invalid UTF-8 (byte tokenizers): replaced by U+FFFD rather than aborting the run.
  const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  errno = 0;
  const bool written = std::fwrite(text.data(), 1, text.size(), file_) == text.size();
  if (!written || std::fflush(file_) != 0) {
    const int error = errno;
    std::clearerr(file_);
    throw LogWriteError("cannot append to " + path_ + ": " + (error ? std::strerror(error) : "write failed") +
                        " (is the disk full?)");
  }
}

std::string compact(double v) {
  char buf[32];
  if (std::abs(v) >= 1e6)
    std::snprintf(buf, sizeof buf, "%.2fM", v / 1e6);
  else if (std::abs(v) >= 1e3)
    std::snprintf(buf, sizeof buf, "%.2fk", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

}  // namespace gtpo::rl
