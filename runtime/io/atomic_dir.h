// Crash-safe writes of a whole directory (a checkpoint: several files that belong together).
//
// write_directory_atomic fills `<dir>.tmp` from scratch, makes every file in it durable (fsync), then puts it
// in place of `dir` with renames: an existing `dir` is first renamed to `<dir>.old`, the new one is renamed
// in, and the old one is removed. A kill at any moment leaves one of these states:
//   - `dir` as it was (old or absent), perhaps with a half-written `<dir>.tmp` beside it;
//   - no `dir` but a complete `<dir>.old` (killed between the two renames);
//   - the new `dir`, perhaps with a complete or partly removed `<dir>.old` beside it.
// Readers go through readable_directory(), which finds the complete one in every state; the next write
// first puts a leftover state right (recover_directory).
#pragma once
#include <functional>
#include <string>

namespace gtpo::io {

// Writes `dir` atomically (see above). `fill` receives the temporary directory, which exists and is empty.
// If `fill` throws, the temporary directory is removed, `dir` is untouched, and the exception propagates.
void write_directory_atomic(const std::string& dir, const std::function<void(const std::string& tmp_dir)>& fill);

// The directory to read for `dir`: `dir` itself, or `<dir>.old` when a replacement was killed between its two
// renames; `dir` unchanged when neither exists (the caller's own error then names it).
std::string readable_directory(const std::string& dir);

// Puts a leftover state right: `<dir>.old` without `dir` is renamed back; `<dir>.old` beside `dir`, and
// `<dir>.tmp`, are removed.
void recover_directory(const std::string& dir);

// The names write_directory_atomic uses beside `dir` (for tests and for listings that skip them).
std::string temporary_directory_for(const std::string& dir);
std::string replaced_directory_for(const std::string& dir);

// fsync of every regular file under `dir`, then of each directory, bottom up.
void sync_tree(const std::string& dir);

}  // namespace gtpo::io
