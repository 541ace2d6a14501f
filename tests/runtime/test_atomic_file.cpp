#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>

#include "runtime/error.h"
#include "runtime/io/atomic_file.h"

namespace fs = std::filesystem;
using Catch::Matchers::Contains;
using namespace gtpo::io;

namespace {

// A fresh directory under the system temp dir, removed with everything in it at scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device rd;
    path = fs::temp_directory_path() /
           ("gtpo_atomic_" + std::to_string(::getpid()) + "_" + std::to_string(rd()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace

TEST_CASE("write_file_atomic then read_file round-trips bytes, including NULs and empty files") {
  TempDir dir;
  const std::string p = dir.file("a.bin");
  const std::string bytes("he\0llo\xff", 7);
  write_file_atomic(p, bytes);
  CHECK(read_file(p) == bytes);
  write_file_atomic(p, "second");
  CHECK(read_file(p) == "second");
  write_file_atomic(p, "");
  CHECK(read_file(p).empty());
  CHECK_FALSE(fs::exists(temporary_path_for(p)));
}

TEST_CASE("read_file reads a file larger than its read buffer") {
  TempDir dir;
  const std::string p = dir.file("big.bin");
  std::string bytes(300'000, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7 + 3);
  write_file_atomic(p, bytes);
  CHECK(read_file(p) == bytes);
}

TEST_CASE("streaming write concatenates the chunks") {
  TempDir dir;
  const std::string p = dir.file("s.bin");
  std::string expected;
  write_file_atomic_streaming(p, [&](const ByteSink& sink) {
    for (int i = 0; i < 1000; ++i) {
      std::string chunk = std::to_string(i) + ",";
      expected += chunk;
      sink(chunk);
    }
    sink("");  // empty chunks are harmless
  });
  CHECK(read_file(p) == expected);
}

TEST_CASE("a producer that throws leaves the old file and no temporary behind") {
  TempDir dir;
  const std::string p = dir.file("keep.bin");
  write_file_atomic(p, "old content");
  CHECK_THROWS_WITH(write_file_atomic_streaming(p,
                                                [](const ByteSink& sink) {
                                                  sink("new partial");
                                                  gtpo::fail("producer gave up");
                                                }),
                    "producer gave up");
  CHECK(read_file(p) == "old content");
  CHECK_FALSE(fs::exists(temporary_path_for(p)));
}

TEST_CASE("an abandoned temporary (write without rename) leaves the old file intact") {
  TempDir dir;
  const std::string p = dir.file("model.bin");
  write_file_atomic(p, "old complete file");
  // Simulate a crash between writing the temporary and renaming it.
  {
    std::ofstream tmp(temporary_path_for(p), std::ios::binary);
    tmp << "new but trunc";
  }
  CHECK(read_file(p) == "old complete file");
  // The next write replaces the stale temporary and completes normally.
  write_file_atomic(p, "new complete file");
  CHECK(read_file(p) == "new complete file");
  CHECK_FALSE(fs::exists(temporary_path_for(p)));
}

TEST_CASE("a writer killed mid-write leaves the old file intact") {
  TempDir dir;
  const std::string p = dir.file("killed.bin");
  write_file_atomic(p, "survivor");
  pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Child: write half of a new file, then die without any cleanup, as on SIGKILL or OOM.
    write_file_atomic_streaming(p, [](const ByteSink& sink) {
      sink(std::string(100'000, 'x'));
      ::raise(SIGKILL);
    });
    ::_exit(0);  // not reached
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(read_file(p) == "survivor");
  const std::string stale = p + ".tmp." + std::to_string(child);
  CHECK(fs::exists(stale));  // the child's partial temporary is what a kill leaves
  CHECK(fs::file_size(stale) == 100'000);
}

TEST_CASE("read_file errors name the path and the OS reason") {
  TempDir dir;
  const std::string missing = dir.file("nope.safetensors");
  CHECK_THROWS_AS(read_file(missing), gtpo::Error);
  CHECK_THROWS_WITH(read_file(missing), Contains(missing) && Contains("No such file or directory"));
  CHECK_THROWS_WITH(read_file(dir.path.string()), Contains(dir.path.string()) && Contains("is a directory"));
}

TEST_CASE("write_file_atomic into a missing directory fails with a clear error") {
  TempDir dir;
  const std::string p = dir.file("no/such/dir/f.bin");
  CHECK_THROWS_WITH(write_file_atomic(p, "x"), Contains(p) && Contains("No such file or directory"));
}

TEST_CASE("make_directories creates parents, accepts existing dirs and rejects files in the way") {
  TempDir dir;
  const std::string nested = dir.file("a/b/c");
  make_directories(nested);
  CHECK(fs::is_directory(nested));
  make_directories(nested);  // idempotent
  write_file_atomic(dir.file("a/b/c/f.bin"), "ok");
  CHECK(read_file(dir.file("a/b/c/f.bin")) == "ok");

  write_file_atomic(dir.file("plain"), "x");
  CHECK_THROWS_WITH(make_directories(dir.file("plain")), Contains(dir.file("plain")));
  CHECK_THROWS_WITH(make_directories(dir.file("plain/sub")), Contains(dir.file("plain/sub")));
}
