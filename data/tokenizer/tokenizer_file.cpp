#include "data/tokenizer/tokenizer_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "runtime/error.h"

namespace gtpo::data {
namespace {

std::string dotted(const std::string& where, const std::string& key) { return where.empty() ? key : where + "." + key; }

const char* type_name(const Json& j) { return j.type_name(); }

}  // namespace

std::string file_context(const std::string& path) { return "tokenizer file '" + path + "': "; }

Json own_tokenizer_json(Json added_tokens, Json pre_tokenizer, Json decoder, Json model) {
  Json root = Json::object();
  root["version"] = "1.0";
  root["truncation"] = nullptr;
  root["padding"] = nullptr;
  root["added_tokens"] = std::move(added_tokens);
  root["normalizer"] = nullptr;
  root["pre_tokenizer"] = std::move(pre_tokenizer);
  root["post_processor"] = nullptr;
  root["decoder"] = std::move(decoder);
  root["model"] = std::move(model);
  return root;
}

void write_file_atomic(const std::string& path, std::string_view content) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  GTPO_CHECK(fd >= 0, "cannot write '", tmp, "': ", std::strerror(errno));
  std::size_t written = 0;
  while (written < content.size()) {
    const ssize_t n = ::write(fd, content.data() + written, content.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail("cannot write '", tmp, "': ", std::strerror(err));
    }
    written += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot flush '", tmp, "': ", std::strerror(err));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail("cannot rename '", tmp, "' to '", path, "': ", std::strerror(err));
  }
  // Make the rename itself durable; failure here is not worth an error (the data is already in place).
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

const Json& require_key(const Json& obj, const std::string& key, const std::string& where, const std::string& path) {
  GTPO_CHECK(obj.is_object(), file_context(path), "'", where.empty() ? "<top level>" : where,
             "' must be an object, found ", type_name(obj));
  auto it = obj.find(key);
  GTPO_CHECK(it != obj.end(), file_context(path), "missing key '", dotted(where, key), "'");
  return *it;
}

const Json& require_object(const Json& obj, const std::string& key, const std::string& where,
                           const std::string& path) {
  const Json& v = require_key(obj, key, where, path);
  GTPO_CHECK(v.is_object(), file_context(path), "'", dotted(where, key), "' must be an object, found ", type_name(v));
  return v;
}

const Json& require_array(const Json& obj, const std::string& key, const std::string& where,
                          const std::string& path) {
  const Json& v = require_key(obj, key, where, path);
  GTPO_CHECK(v.is_array(), file_context(path), "'", dotted(where, key), "' must be an array, found ", type_name(v));
  return v;
}

std::string require_string(const Json& obj, const std::string& key, const std::string& where,
                           const std::string& path) {
  const Json& v = require_key(obj, key, where, path);
  GTPO_CHECK(v.is_string(), file_context(path), "'", dotted(where, key), "' must be a string, found ", type_name(v));
  return v.get<std::string>();
}

}  // namespace gtpo::data
