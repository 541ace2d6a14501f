// write_directory_atomic: the whole directory is replaced or not at all, and every state a kill can leave
// behind reads back as a complete directory (old or new) and is put right by the next write.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "runtime/error.h"
#include "runtime/io/atomic_dir.h"
#include "runtime/io/atomic_file.h"

namespace fs = std::filesystem;
using namespace gtpo::io;

namespace {
std::string scratch(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("gtpo_atomic_dir_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d.string();
}

void write_version(const std::string& dir, const std::string& version) {
  write_directory_atomic(dir, [&](const std::string& tmp) {
    write_file_atomic(tmp + "/a.txt", version);
    write_file_atomic(tmp + "/b.txt", version + version);
  });
}

std::string version_of(const std::string& dir) {
  const std::string d = readable_directory(dir);
  const std::string a = read_file(d + "/a.txt");
  REQUIRE(read_file(d + "/b.txt") == a + a);  // the two files belong to the same write
  return a;
}
}  // namespace

TEST_CASE("atomic_dir: writes, replaces and leaves nothing beside the directory", "[runtime][io][atomic_dir]") {
  const std::string root = scratch("replace");
  const std::string dir = root + "/ckpt";
  write_version(dir, "1");
  CHECK(version_of(dir) == "1");
  write_version(dir + "/", "2");  // a trailing slash names the same directory
  CHECK(version_of(dir) == "2");
  CHECK_FALSE(fs::exists(temporary_directory_for(dir)));
  CHECK_FALSE(fs::exists(replaced_directory_for(dir)));
  CHECK(std::distance(fs::directory_iterator(root), fs::directory_iterator()) == 1);
  fs::remove_all(root);
}

TEST_CASE("atomic_dir: a failing fill leaves the old directory untouched", "[runtime][io][atomic_dir]") {
  const std::string root = scratch("fail");
  const std::string dir = root + "/ckpt";
  write_version(dir, "1");
  CHECK_THROWS_WITH(write_directory_atomic(dir,
                                           [](const std::string& tmp) {
                                             write_file_atomic(tmp + "/a.txt", "partial");
                                             gtpo::fail("disk full");
                                           }),
                    "disk full");
  CHECK(version_of(dir) == "1");
  CHECK_FALSE(fs::exists(temporary_directory_for(dir)));
  fs::remove_all(root);
}

TEST_CASE("atomic_dir: every state a kill can leave reads as a complete directory and is put right",
          "[runtime][io][atomic_dir]") {
  const std::string root = scratch("states");
  const std::string dir = root + "/ckpt", tmp = temporary_directory_for(dir), old = replaced_directory_for(dir);
  auto make = [](const std::string& d, const std::string& version, bool complete) {
    fs::create_directories(d);
    write_file_atomic(d + "/a.txt", version);
    if (complete) write_file_atomic(d + "/b.txt", version + version);
  };

  SECTION("killed while filling: a half-written temporary beside the old directory") {
    make(dir, "1", true);
    make(tmp, "2", false);
    CHECK(version_of(dir) == "1");
    recover_directory(dir);
    CHECK_FALSE(fs::exists(tmp));
    CHECK(version_of(dir) == "1");
  }
  SECTION("killed between the two renames: only the old copy exists") {
    make(old, "1", true);
    make(tmp, "2", true);
    CHECK(readable_directory(dir) == old);
    CHECK(version_of(dir) == "1");
    recover_directory(dir);
    CHECK(fs::exists(dir));
    CHECK_FALSE(fs::exists(old));
    CHECK(version_of(dir) == "1");
  }
  SECTION("killed while removing the old copy: the new directory is in place") {
    make(dir, "2", true);
    make(old, "1", false);
    CHECK(version_of(dir) == "2");
    recover_directory(dir);
    CHECK_FALSE(fs::exists(old));
    CHECK(version_of(dir) == "2");
  }
  // Whatever was left, the next write succeeds and nothing is left beside it.
  write_version(dir, "3");
  CHECK(version_of(dir) == "3");
  CHECK_FALSE(fs::exists(tmp));
  CHECK_FALSE(fs::exists(old));
  fs::remove_all(root);
}
