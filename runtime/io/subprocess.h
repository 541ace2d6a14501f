// A child process spoken to in lines over pipes: `/bin/sh -c COMMAND` with its stdin, stdout and stderr
// connected to this process. Used for long-lived helpers in any language (external reward functions).
// Writing and reading are interleaved with poll(), so a child that answers while it is still being fed
// can never deadlock against us on full pipes; the child's stderr is drained into a ring buffer whose tail
// error messages can show.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace gtpo::io {

class Subprocess {
 public:
  // Starts the child; throws gtpo::Error naming COMMAND when it cannot be started. SIGPIPE is ignored from
  // then on (when it was at its default), so writing to a child that has died is an error, not our death.
  explicit Subprocess(const std::string& command);
  // Closes the child's stdin, gives it a moment to exit on its own, then kills it.
  ~Subprocess();
  Subprocess(const Subprocess&) = delete;
  Subprocess& operator=(const Subprocess&) = delete;

  struct Exchange {
    std::vector<std::string> lines;  // complete stdout lines, without '\n'
    bool eof = false;                // the child closed its stdout (usually: it exited)
    bool timed_out = false;          // TIMEOUT_S passed without a new line
    bool write_failed = false;       // the child stopped reading its stdin
    bool overflowed = false;         // it wrote more than kMaxPendingOutput bytes beyond the lines taken
    bool interrupted = false;        // STOP said so
  };
  static constexpr std::size_t kMaxPendingOutput = std::size_t{64} << 20;
  // Writes TEXT to the child's stdin while reading its stdout, until N lines have come back, the child
  // closes its stdout, TIMEOUT_S seconds pass without a new complete line (the clock restarts at each), its
  // pending output passes kMaxPendingOutput, or STOP (asked every 100 ms) returns true.
  Exchange exchange(const std::string& text, std::size_t n, double timeout_s,
                    const std::function<bool()>& stop = {});
  // Bytes the child wrote to stdout beyond the lines exchange() returned.
  const std::string& unread() const { return out_buffer_; }
  // The last bytes the child wrote to stderr (at most kStderrTail).
  std::string stderr_tail() const;
  static constexpr std::size_t kStderrTail = 4096;
  // "exited with status 3", "killed by signal 9" or "still running": waits up to WAIT_S for it to end; once
  // it has, whatever it left running in its process group is killed and it is reaped.
  std::string exit_status(double wait_s);
  // Kills the child and everything it started (SIGKILL to its process group) and reaps it; harmless when
  // it has already ended.
  void kill();
  // From a signal handler about to end the process (async-signal-safe): SIGKILL to the process group of
  // every child still running, so that none outlives gtpo.
  static void kill_all_from_signal_handler();
  const std::string& command() const { return command_; }

 private:
  void drain_stderr();
  void close_fd(int& fd);
  bool exited_within(double wait_s);  // without reaping: the group stays ours until reap()
  void reap();

  std::string command_;
  int pid_ = -1;
  int in_ = -1, out_ = -1, err_ = -1;  // our ends: the child's stdin, stdout, stderr
  bool reaped_ = false;
  int status_ = 0;
  std::string out_buffer_;
  std::string err_ring_;
};

}  // namespace gtpo::io
