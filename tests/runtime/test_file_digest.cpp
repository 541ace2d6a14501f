// runtime/io/file_digest.h: XXH3-128 in xxh128sum's spelling, the digest file of a directory, and what
// verification refuses.
#include <catch2/catch.hpp>
#include <filesystem>

#include "runtime/error.h"
#include "runtime/io/atomic_file.h"
#include "runtime/io/file_digest.h"
#include "tests/support/commands.h"

using namespace gtpo;
using Catch::Contains;

TEST_CASE("file digests: xxh128sum's values, a directory's digest file, and what verification refuses",
          "[io]") {
  const std::string dir = testing::fresh_temp_dir("file_digest");
  io::write_file_atomic(dir + "/empty", "");
  io::write_file_atomic(dir + "/abc", "abc");
  // `printf '' | xxh128sum` and `printf abc | xxh128sum` (xxHash 0.8.1).
  CHECK(io::file_digest(dir + "/empty") == "99aa06d3014798d86001c324468d497f");
  CHECK(io::file_digest(dir + "/abc") == "06b05ab6733a618578af5f94892f3950");

  CHECK_FALSE(io::verify_directory_digests(dir));  // no digest file: nothing to check
  io::write_directory_digests(dir);
  const std::string manifest = dir + "/" + io::kDigestFile;
  CHECK(io::read_file(manifest) ==
        "06b05ab6733a618578af5f94892f3950  abc\n99aa06d3014798d86001c324468d497f  empty\n");
  CHECK(io::verify_directory_digests(dir));

  io::write_file_atomic(dir + "/abc", "abd");
  CHECK_THROWS_WITH(io::verify_directory_digests(dir), Contains("abc does not match its digest"));
  io::write_file_atomic(dir + "/abc", "abc");
  std::filesystem::remove(dir + "/empty");
  CHECK_THROWS_WITH(io::verify_directory_digests(dir), Contains("empty is missing"));
  io::write_file_atomic(manifest, "06b05ab6733a618578af5f94892f3950 abc\n");
  CHECK_THROWS_WITH(io::verify_directory_digests(dir),
                    Contains(manifest + " line 1") && Contains("expected"));
  io::write_file_atomic(manifest, "06b05ab6733a618578af5f94892f3950  ../abc\n");
  CHECK_THROWS_WITH(io::verify_directory_digests(dir), Contains("is not a file name in the directory"));
  std::filesystem::remove_all(dir);
}
