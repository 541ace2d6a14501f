// What gtpo reads from the user is a regular file of a bounded size: a FIFO would block a reader forever,
// /dev/zero never ends, and a file larger than any sane input would end in std::bad_alloc. These limits
// (docs/reliability.md, "Input limits") are checked from the file's metadata, before it is opened.
// Header-only: data/ reads files too and links no runtime library.
#pragma once
#include <sys/stat.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

#include "runtime/error.h"

namespace gtpo::io {

// Configs, chat and prompt templates, tokenizer files (tokenizer.json of real models: up to ~35 MB).
inline constexpr std::uint64_t kMaxConfigBytes = std::uint64_t{256} << 20;
// Inputs read whole: JSONL datasets and rollouts, run logs.
inline constexpr std::uint64_t kMaxInputBytes = std::uint64_t{8} << 30;
// One line of a JSONL input.
inline constexpr std::uint64_t kMaxLineBytes = std::uint64_t{64} << 20;

inline std::string byte_size_text(std::uint64_t bytes) {
  return bytes >= (std::uint64_t{1} << 30) ? std::to_string(bytes >> 30) + " GiB"
                                           : std::to_string(bytes >> 20) + " MiB";
}

// An error naming PATH (and WHAT it was read as) unless PATH is a regular file of at most LIMIT bytes.
inline void check_input_file(const std::string& path, std::uint64_t limit, const std::string& what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(what, " '", path, "': cannot open: ", std::strerror(errno));
  const char* kind = S_ISDIR(st.st_mode)    ? "a directory"
                     : S_ISFIFO(st.st_mode) ? "a FIFO (named pipe)"
                     : S_ISCHR(st.st_mode)  ? "a character device"
                     : S_ISBLK(st.st_mode)  ? "a block device"
                     : S_ISSOCK(st.st_mode) ? "a socket"
                                            : nullptr;
  if (kind != nullptr)
    fail(what, " '", path, "' is ", kind, ", not a regular file: gtpo reads its inputs from files");
  if (static_cast<std::uint64_t>(st.st_size) > limit)
    fail(what, " '", path, "' is ", byte_size_text(static_cast<std::uint64_t>(st.st_size)),
         ", over the limit of ", byte_size_text(limit), " for ", what, " files");
}

}  // namespace gtpo::io
