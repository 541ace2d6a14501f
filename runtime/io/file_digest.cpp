#include "runtime/io/file_digest.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/input_file.h"

namespace gtpo::io {
namespace fs = std::filesystem;
namespace {

constexpr std::size_t kDigestHexChars = 32;
// One line per file of a checkpoint: far below this for any real one.
constexpr std::uint64_t kMaxDigestFileBytes = std::uint64_t{1} << 20;

bool is_temporary(const std::string& name) { return name.find(".tmp") != std::string::npos; }

std::string digest_line_error(const std::string& manifest, std::size_t line) {
  return manifest + " line " + std::to_string(line) + ": ";
}

}  // namespace

std::string file_digest(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  GTPO_CHECK(fd >= 0, "cannot read '", path, "' to check its digest: ", std::strerror(errno));
  XXH3_state_t* state = XXH3_createState();
  XXH3_128bits_reset(state);
  std::vector<char> buffer(std::size_t{4} << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      const XXH128_hash_t hash = XXH3_128bits_digest(state);
      XXH3_freeState(state);
      GTPO_CHECK(n == 0, "read error in '", path, "': ", std::strerror(err));
      XXH128_canonical_t canonical;
      XXH128_canonicalFromHash(&canonical, hash);
      static const char* hex = "0123456789abcdef";
      std::string out;
      for (unsigned char b : canonical.digest) out += {hex[b >> 4], hex[b & 15]};
      return out;
    }
    XXH3_128bits_update(state, buffer.data(), static_cast<std::size_t>(n));
  }
}

void write_directory_digests(const std::string& dir) {
  std::vector<std::string> names;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name != kDigestFile && !is_temporary(name)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  std::string text;
  for (const std::string& name : names)
    text += file_digest((fs::path(dir) / name).string()) + "  " + name + "\n";
  write_file_atomic((fs::path(dir) / kDigestFile).string(), text);
}

bool verify_directory_digests(const std::string& dir) {
  const std::string manifest = (fs::path(dir) / kDigestFile).string();
  std::error_code ec;
  if (!fs::exists(manifest, ec)) return false;
  check_input_file(manifest, kMaxDigestFileBytes, "checkpoint digests");
  std::istringstream lines(read_file(manifest));
  std::string line;
  for (std::size_t number = 1; std::getline(lines, line); ++number) {
    GTPO_CHECK(line.size() > kDigestHexChars + 2 && line.compare(kDigestHexChars, 2, "  ") == 0,
               digest_line_error(manifest, number), "expected '<32 hex digits>  <file name>', found '", line,
               "'");
    const std::string name = line.substr(kDigestHexChars + 2);
    GTPO_CHECK(name.find('/') == std::string::npos && name != "." && name != "..",
               digest_line_error(manifest, number), "'", name, "' is not a file name in the directory");
    const std::string path = (fs::path(dir) / name).string();
    GTPO_CHECK(fs::is_regular_file(path, ec), "checkpoint '", dir, "': ", name, " is missing (", kDigestFile,
               " lists it): the directory is incomplete");
    GTPO_CHECK(
        file_digest(path) == line.substr(0, kDigestHexChars), "checkpoint '", dir, "': ", name,
        " does not match its digest in ", kDigestFile,
        ": it changed after it was saved (a disk or copy error, or an edit). Use another checkpoint; if the "
        "change was deliberate, delete ",
        kDigestFile, " to load the directory unchecked");
  }
  return true;
}

}  // namespace gtpo::io
