// Checkpoint digests: every file of a checkpoint directory is hashed (XXH3-128, xxHash) when the directory is
// written, into checksums.xxh128 beside them, in the format `xxh128sum` prints (so `xxh128sum -c
// checksums.xxh128` run in the directory checks it too). A reader verifies them before trusting anything in
// the directory: a flipped bit, a truncated copy or an edited state.json is an error naming the file, not a
// run that resumes from different numbers. A directory without the file (a Hugging Face model) is read as is.
#pragma once
#include <string>

namespace gtpo::io {

inline constexpr const char* kDigestFile = "checksums.xxh128";

// The XXH3-128 of a file's bytes as 32 lowercase hex digits (xxh128sum's spelling).
std::string file_digest(const std::string& path);
// Writes DIR/checksums.xxh128 over every regular file in DIR (sorted by name; the digest file itself and
// temporary files left out). Called last, by the writer that fills the directory.
void write_directory_digests(const std::string& dir);
// Checks every file DIR/checksums.xxh128 lists against its digest; false when DIR has no such file.
bool verify_directory_digests(const std::string& dir);

}  // namespace gtpo::io
