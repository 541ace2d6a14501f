// Runs the gtpo binary as a child process, for tests that signal or kill it: fork + exec with stdout and
// stderr sent to a file, OMP_WAIT_POLICY set (so gtpo does not re-exec itself first).
#pragma once
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace gtpo::testing {

// Runs a shell command line to its end: its exit status (-1 if a signal ended it) and its stdout + stderr.
struct ShellResult {
  int code = -1;
  std::string output;
};
inline ShellResult run_shell(const std::string& command) {
  ShellResult r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) r.output.append(buf, n);
  const int status = ::pclose(pipe);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline std::string gtpo_binary() { return std::string(GTPO_BINARY_DIR) + "/gtpo"; }

// Starts `gtpo ARGS...`; its output goes to LOG (appended) or /dev/null.
inline pid_t spawn_gtpo(const std::vector<std::string>& args, const std::string& log = "/dev/null") {
  const std::string binary = gtpo_binary();
  std::vector<std::string> all = {binary};
  all.insert(all.end(), args.begin(), args.end());
  const pid_t child = ::fork();
  if (child != 0) return child;
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
  }
  ::setenv("OMP_WAIT_POLICY", "passive", 1);
  std::vector<char*> argv;
  for (std::string& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(binary.c_str(), argv.data());
  ::_exit(127);
}

// Waits for the child; its exit status, or 128 + signal when a signal ended it.
inline int wait_exit_code(pid_t child) {
  int status = 0;
  ::waitpid(child, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Runs `gtpo ARGS...` to the end: (exit code, seconds).
inline std::pair<int, double> run_gtpo(const std::vector<std::string>& args, const std::string& log = "/dev/null") {
  const auto start = std::chrono::steady_clock::now();
  const int code = wait_exit_code(spawn_gtpo(args, log));
  return {code, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

}  // namespace gtpo::testing
