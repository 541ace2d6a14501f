#include "apps/cpu_load.h"

#include <omp.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <sstream>
#include <thread>

namespace gtpo::apps {

std::optional<CpuTimes> parse_proc_stat(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    // user nice system idle iowait irq softirq steal (guest time is inside user already)
    double v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int n = 0;
    while (n < 8 && fields >> v[n]) ++n;
    if (n < 4) return std::nullopt;
    CpuTimes t;
    for (int i = 0; i < n; ++i) t.total += v[i];
    t.busy = t.total - v[3] - (n > 4 ? v[4] : 0.0);
    return t;
  }
  return std::nullopt;
}

int threads_for_load(double busy_cores, int cores, int max_threads) {
  const int free_cores = static_cast<int>(std::lround(static_cast<double>(cores) - busy_cores));
  return std::max(1, std::min(max_threads, free_cores));
}

namespace {
std::optional<CpuTimes> read_proc_stat() {
  std::ifstream in("/proc/stat");
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return parse_proc_stat(text.str());
}
}  // namespace

std::string fit_threads_to_free_cores() {
  const int cores = omp_get_num_procs(), threads = omp_get_max_threads();
  const std::optional<CpuTimes> a = read_proc_stat();
  // This process sleeps meanwhile: the busy time is other processes'.
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::optional<CpuTimes> b = read_proc_stat();
  if (!a || !b || b->total <= a->total) return "";
  const double busy_cores = (b->busy - a->busy) / (b->total - a->total) * static_cast<double>(cores);
  const int chosen = threads_for_load(busy_cores, cores, threads);
  if (chosen >= threads) return "";
  omp_set_num_threads(chosen);
  std::ostringstream note;
  note.precision(2);
  note << "about " << busy_cores << " of this machine's " << cores
       << " cores are busy with other processes: training with " << chosen << " thread"
       << (chosen > 1 ? "s" : "") << " instead of " << threads
       << " (threads waiting for a busy core slow every step; results do not depend on it; set train.threads "
          "to choose)";
  return note.str();
}

}  // namespace gtpo::apps
