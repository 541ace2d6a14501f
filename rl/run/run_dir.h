// A run directory belongs to one run: `gtpo train` starts only in an empty (or new) directory, continues
// only with --resume, and starts over only with --overwrite, which removes the run's own files and nothing
// else. So logs are never mixed and no checkpoint of another run is ever mistaken for this one's.
#pragma once
#include <string>

#include "runtime/io/file_lock.h"

namespace gtpo::rl {

// The lock file a training process holds in its run directory (rl/run/run_dir.cpp: lock_run_directory).
inline constexpr const char* kRunLockFile = ".gtpo.lock";

// True for the names a run writes at the top of its directory (config.yaml, the JSONL logs, checkpoints/,
// the default `gtpo sft --out` checkpoint sft/, and the temporary files of their atomic writes).
bool is_run_file(const std::string& name);

// True when DIR holds only the logs of a start that failed before its first checkpoint (no checkpoint, no
// sft/ of `gtpo sft`, nothing but run files): nothing there can be resumed, so a new run may take it.
bool holds_failed_start(const std::string& dir);

// An error when DIR exists and is not empty (its lock file aside) and does not hold a failed start: it
// names --resume and --overwrite.
void require_fresh_run_directory(const std::string& dir);

// Creates DIR (train.out_dir) and takes its lock: one training process per run directory. Another process
// holding it is an error naming the directory and that process's pid. The lock lasts as long as the returned
// object (the process's life, a kill -9 included).
io::FileLock lock_run_directory(const std::string& dir);

// --overwrite: removes the run files (but the lock held) from DIR so that a new run can start there. If DIR
// holds anything that is not a run file, nothing is removed and the error names it (so a mistyped out_dir
// never loses data).
void clear_run_directory(const std::string& dir);

}  // namespace gtpo::rl
