#include "runtime/io/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <system_error>

#include "runtime/error.h"
#include "runtime/io/input_file.h"

namespace gtpo::io {
namespace {

// std::strerror is not guaranteed thread-safe; the generic category gives the same text without shared state.
std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// Closes the descriptor on every path out of a scope.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Close explicitly where its error matters (a failed close can report a lost write on some file systems).
  int release_and_close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

void write_all(int fd, std::string_view chunk, const std::string& tmp_path) {
  const char* p = chunk.data();
  size_t left = chunk.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot write '", tmp_path, "': ", errno_text(errno));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
}

std::string parent_directory(const std::string& path) {
  std::filesystem::path parent = std::filesystem::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// Makes the rename itself durable: without it a power loss can forget the new directory entry.
void fsync_directory(const std::string& dir) {
  FileDescriptor fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) fail("cannot open directory '", dir, "' to sync it: ", errno_text(errno));
  if (::fsync(fd.get()) != 0) fail("cannot fsync directory '", dir, "': ", errno_text(errno));
}

}  // namespace

std::string temporary_path_for(const std::string& path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void write_file_atomic_streaming(const std::string& path,
                                 const std::function<void(const ByteSink&)>& produce) {
  GTPO_CHECK(!path.empty(), "write_file_atomic: empty path");
  const std::string tmp = temporary_path_for(path);
  // O_TRUNC: a stale temporary from an earlier process with the same pid is simply overwritten.
  FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (fd.get() < 0) fail("cannot create '", tmp, "' (to write '", path, "'): ", errno_text(errno));
  try {
    produce([&](std::string_view chunk) { write_all(fd.get(), chunk, tmp); });
    if (::fsync(fd.get()) != 0) fail("cannot fsync '", tmp, "': ", errno_text(errno));
    if (fd.release_and_close() != 0) fail("cannot close '", tmp, "': ", errno_text(errno));
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
      fail("cannot rename '", tmp, "' to '", path, "': ", errno_text(errno));
    }
  } catch (...) {
    ::unlink(tmp.c_str());  // best effort; the old `path` is untouched either way
    throw;
  }
  fsync_directory(parent_directory(path));
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  write_file_atomic_streaming(path, [&](const ByteSink& sink) { sink(bytes); });
}

std::string read_file(const std::string& path) {
  check_input_file(path, kMaxInputBytes, "input");
  FileDescriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) fail("cannot open '", path, "': ", errno_text(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail("cannot stat '", path, "': ", errno_text(errno));
  if (S_ISDIR(st.st_mode)) fail("cannot read '", path, "': ", errno_text(EISDIR));
  // Read straight into the result (no second copy of a multi-GB file). The size is only a hint: pipes and
  // /proc files report 0 and a file may grow, so read until EOF; the +1 lets the usual case end in one extra
  // read.
  std::string out(S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : size_t{1} << 16, '\0');
  size_t got = 0;
  for (;;) {
    if (got == out.size()) out.resize(out.size() * 2);
    ssize_t n = ::read(fd.get(), out.data() + got, out.size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("cannot read '", path, "': ", errno_text(errno));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  out.resize(got);
  return out;
}

void make_directories(const std::string& path, const std::string& what) {
  GTPO_CHECK(!path.empty(), what, " is empty: give a directory path");
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) fail(what, " '", path, "': cannot create the directory: ", ec.message());
  // create_directories reports success for an existing non-directory on some library versions.
  if (!std::filesystem::is_directory(path, ec))
    fail(what, " '", path, "': cannot create the directory: a file is in the way");
}

}  // namespace gtpo::io
