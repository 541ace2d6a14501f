// Whole-file reads and crash-safe whole-file writes.
//
// A write goes to `<path>.tmp.<pid>`, is fsync'ed, renamed over `path`, and the directory is fsync'ed.
// rename(2) is atomic within a file system, so a reader (or a process restarted after a kill or power loss)
// sees either the complete old file or the complete new one, never a mix. A killed writer leaves only a stale
// `.tmp.<pid>` file. Two threads of one process must not write the same path at once (they share the name).
#pragma once
#include <functional>
#include <string>
#include <string_view>

namespace gtpo::io {

// Receives the next chunk of the file being written; may be called any number of times.
using ByteSink = std::function<void(std::string_view chunk)>;

// Writes `bytes` to `path` atomically (see above). Throws gtpo::Error naming the path and the OS error.
void write_file_atomic(const std::string& path, std::string_view bytes);

// Streaming form: `produce` is called once and pushes the file's content through the sink in as many chunks
// as it likes, so a multi-GB checkpoint needs no contiguous copy. If `produce` throws, the temporary file is
// removed, the old file is untouched, and the exception propagates.
void write_file_atomic_streaming(const std::string& path,
                                 const std::function<void(const ByteSink&)>& produce);

// The temporary name this process uses while writing `path`; exposed so tests can simulate an interrupted
// write.
std::string temporary_path_for(const std::string& path);

// Reads the whole file. Throws gtpo::Error naming the path and the OS error (missing file, directory, ...);
// what is not a regular file (a FIFO, /dev/zero) or is over io::kMaxInputBytes is refused (input_file.h).
std::string read_file(const std::string& path);

// mkdir -p: creates `path` and missing parents; succeeds if it already is a directory. Any failure (empty
// path, a file in the way, no permission, a name too long) is a gtpo::Error naming WHAT (the key or flag)
// and the path: the one check every writer of a directory goes through.
void make_directories(const std::string& path, const std::string& what = "directory");

}  // namespace gtpo::io
