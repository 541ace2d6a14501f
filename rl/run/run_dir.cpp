#include "rl/run/run_dir.h"

#include <filesystem>
#include <set>
#include <vector>

#include "runtime/error.h"
#include "runtime/io/atomic_file.h"

namespace gtpo::rl {

namespace fs = std::filesystem;

namespace {
const std::set<std::string>& run_files() {
  static const std::set<std::string> names = {"config.yaml", "metrics.jsonl",  "eval.jsonl",  "samples.jsonl",
                                              "sft.jsonl",   "segments.jsonl", "checkpoints", "sft",
                                              "sft.tmp",     "sft.old",        "report.html", "tensorboard",
                                              kRunLockFile};
  return names;
}
}  // namespace

bool is_run_file(const std::string& name) {
  if (run_files().count(name)) return true;
  // write_file_atomic's temporaries: "<file>.tmp.<pid>" of a run file.
  const size_t tmp = name.find(".tmp.");
  return tmp != std::string::npos && run_files().count(name.substr(0, tmp)) != 0;
}

bool holds_failed_start(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return false;
  bool logs = false;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == kRunLockFile) continue;
    if (!is_run_file(name) || (name.rfind("sft", 0) == 0 && name != "sft.jsonl"))
      return false;                                                          // sft/: a model
    if (name == "checkpoints" && !fs::is_empty(e.path(), ec)) return false;  // even a half-written one
    logs = true;
  }
  return logs;
}

void require_fresh_run_directory(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec) || holds_failed_start(dir)) return;
  GTPO_CHECK(fs::is_directory(dir, ec), "train.out_dir '", dir, "' exists and is not a directory");
  bool empty = true;
  for (const fs::directory_entry& e : fs::directory_iterator(dir))
    empty = empty && e.path().filename() == kRunLockFile;
  GTPO_CHECK(empty, "train.out_dir '", dir,
             "' is not empty (it holds another run's files): continue that run with --resume ", dir,
             ", start over there with --overwrite, or choose a new train.out_dir");
}

io::FileLock lock_run_directory(const std::string& dir) {
  io::make_directories(dir, "train.out_dir");
  const std::string path = (fs::path(dir) / kRunLockFile).string();
  std::optional<io::FileLock> lock = io::FileLock::try_lock(path);
  if (!lock) {
    std::string holder = io::read_file(path);
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    fail("train.out_dir '", dir, "' is in use by another gtpo process (pid ",
         holder.empty() ? "unknown" : holder, ", holding ", path,
         "): two processes in one run directory would mix their checkpoints and logs; "
         "wait for it to end or stop it, or choose another train.out_dir");
  }
  return std::move(*lock);
}

void clear_run_directory(const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  GTPO_CHECK(fs::is_directory(dir, ec), "train.out_dir '", dir, "' exists and is not a directory");
  std::vector<fs::path> doomed;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == kRunLockFile) continue;  // held by this process: removing it would let another one in
    GTPO_CHECK(
        is_run_file(name), "--overwrite: train.out_dir '", dir, "' holds '", name,
        "', which is not a gtpo run file; nothing was removed (choose another train.out_dir or move it)");
    doomed.push_back(e.path());
  }
  for (const fs::path& p : doomed) {
    fs::remove_all(p, ec);
    GTPO_CHECK(!ec, "--overwrite: cannot remove '", p.string(), "': ", ec.message());
  }
}

}  // namespace gtpo::rl
