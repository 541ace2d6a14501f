#include "runtime/io/atomic_dir.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>

#include "runtime/error.h"

namespace gtpo::io {
namespace {

namespace fs = std::filesystem;

std::string errno_text(int err) { return std::error_code(err, std::generic_category()).message(); }

// "run/ckpt/" and "run/ckpt" name the same directory; the suffixes go on the last component.
std::string normalised(const std::string& dir) {
  GTPO_CHECK(!dir.empty(), "write_directory_atomic: empty path");
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  return d;
}

void fsync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) fail("cannot open '", path, "' to sync it: ", errno_text(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) fail("cannot fsync '", path, "': ", errno_text(err));
}

std::string parent_of(const std::string& path) {
  const fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

void rename_or_fail(const std::string& from, const std::string& to) {
  if (::rename(from.c_str(), to.c_str()) != 0) fail("cannot rename '", from, "' to '", to, "': ", errno_text(errno));
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) fail("cannot remove '", path, "': ", ec.message());
}

}  // namespace

std::string temporary_directory_for(const std::string& dir) { return normalised(dir) + ".tmp"; }
std::string replaced_directory_for(const std::string& dir) { return normalised(dir) + ".old"; }

void sync_tree(const std::string& dir) {
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (e.is_directory() && !e.is_symlink())
      sync_tree(e.path().string());
    else if (e.is_regular_file())
      fsync_path(e.path().string(), false);
  }
  fsync_path(dir, true);
}

std::string readable_directory(const std::string& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) return dir;
  const std::string old = replaced_directory_for(dir);
  if (fs::is_directory(old, ec)) return old;
  return dir;
}

void recover_directory(const std::string& dir) {
  const std::string d = normalised(dir), old = replaced_directory_for(d);
  std::error_code ec;
  if (fs::exists(old, ec)) {
    if (fs::exists(d, ec)) {
      remove_tree(old);  // the new one is in place: the old one was being removed
    } else {
      rename_or_fail(old, d);  // killed between the two renames: the old one is the complete one
      fsync_path(parent_of(d), true);
    }
  }
  remove_tree(temporary_directory_for(d));
}

void write_directory_atomic(const std::string& dir, const std::function<void(const std::string& tmp_dir)>& fill) {
  const std::string d = normalised(dir), tmp = temporary_directory_for(d), old = replaced_directory_for(d);
  const std::string parent = parent_of(d);
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) fail("cannot create directory '", parent, "': ", ec.message());
  recover_directory(d);
  fs::create_directories(tmp, ec);
  if (ec) fail("cannot create directory '", tmp, "': ", ec.message());
  try {
    fill(tmp);
    sync_tree(tmp);
  } catch (...) {
    fs::remove_all(tmp, ec);  // best effort; `dir` is untouched either way
    throw;
  }
  const bool replacing = fs::exists(d, ec);
  if (replacing) rename_or_fail(d, old);
  rename_or_fail(tmp, d);
  fsync_path(parent, true);
  if (replacing) remove_tree(old);
}

}  // namespace gtpo::io
