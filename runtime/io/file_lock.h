// An advisory, exclusive lock on a file (flock): held while the object lives, released by the kernel when the
// process ends in any way (kill -9 included), so a crashed holder never leaves a stale lock behind.
#pragma once
#include <optional>
#include <string>

namespace gtpo::io {

class FileLock {
 public:
  // Locks PATH (created if missing) without waiting and writes this process's pid into it; nullopt when
  // another process holds the lock. Any other failure is a gtpo::Error naming PATH.
  static std::optional<FileLock> try_lock(const std::string& path);
  FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;
  ~FileLock();

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace gtpo::io
