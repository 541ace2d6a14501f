// The default CPU thread count on a machine other processes keep busy. OpenMP's default (one thread per
// core) waits at every barrier for a thread the scheduler gives to another process: with one of 2 cores
// taken, a short run took 30x longer at the default than with 1 thread. Results do not depend on the thread
// count (the CPU backend's reductions have fixed orders), so picking fewer threads changes only the speed.
#pragma once
#include <optional>
#include <string>

namespace gtpo::apps {

// Busy and total jiffies of the "cpu " line of /proc/stat's text; nullopt when it has none.
struct CpuTimes {
  double busy = 0, total = 0;
};
std::optional<CpuTimes> parse_proc_stat(const std::string& text);

// Threads to use when CORES cores exist and BUSY_CORES of them (a measured average) run other processes:
// the free cores, rounded, at least 1 and at most MAX_THREADS.
int threads_for_load(double busy_cores, int cores, int max_threads);

// With train.threads 0 (the default): measures the other processes' load over a tenth of a second and, when
// fewer cores are free than OpenMP would use, lowers its thread count. Returns the one-line note that says
// so, or "" when nothing changed (no /proc/stat, an idle machine).
std::string fit_threads_to_free_cores();

}  // namespace gtpo::apps
