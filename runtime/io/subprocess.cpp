#include "runtime/io/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "runtime/error.h"

extern char** environ;

namespace gtpo::io {
namespace {

using Clock = std::chrono::steady_clock;

// The process groups of the running children, for kill_all_from_signal_handler (lock-free slots).
constexpr int kMaxChildren = 64;
std::atomic<pid_t> g_children[kMaxChildren];

void register_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t empty = 0;
    if (slot.compare_exchange_strong(empty, pid)) return;
  }
}

void unregister_child(pid_t pid) {
  for (auto& slot : g_children) {
    pid_t expected = pid;
    if (slot.compare_exchange_strong(expected, 0)) return;
  }
}

void make_pipe(int fds[2], const std::string& command) {
  GTPO_CHECK(::pipe2(fds, O_CLOEXEC) == 0, "cannot start '", command, "': pipe: ", std::strerror(errno));
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

Subprocess::Subprocess(const std::string& command) : command_(command) {
  // A child that dies while we write to it must give us EPIPE, not kill us. Only a default disposition is
  // changed: a handler someone installed on purpose stays.
  struct sigaction old {};
  if (::sigaction(SIGPIPE, nullptr, &old) == 0 && old.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);

  int in[2], out[2], err[2];
  make_pipe(in, command);
  make_pipe(out, command);
  make_pipe(err, command);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  // dup2 clears close-on-exec on the targets; every other pipe end is closed by exec.
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  // The child starts with SIGPIPE and SIGXFSZ at their defaults even though gtpo ignores them.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGXFSZ);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  // Its own process group: kill() ends whatever the shell started too, and a Ctrl-C meant for gtpo is
  // not delivered to the child (gtpo stops at a step boundary and then closes its input).
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  const int rc = ::posix_spawn(&pid_, "/bin/sh", &actions, &attr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  in_ = in[1];
  out_ = out[0];
  err_ = err[0];
  if (rc != 0) {
    close_fd(in_);
    close_fd(out_);
    close_fd(err_);
    pid_ = -1;
    fail("cannot start '", command, "': ", std::strerror(rc));
  }
  set_nonblocking(in_);
  set_nonblocking(out_);
  set_nonblocking(err_);
  register_child(pid_);
}

Subprocess::~Subprocess() {
  close_fd(in_);  // a well-behaved child exits at the end of its input
  if (pid_ > 0 && !reaped_) {
    (void)exited_within(2.0);
    kill();  // its group too: a background child of the shell must not outlive us
  }
  close_fd(out_);
  close_fd(err_);
}

bool Subprocess::exited_within(double wait_s) {
  const auto until =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(wait_s));
  for (;;) {
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
      return true;  // gone
    if (info.si_pid == pid_) return true;
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void Subprocess::reap() {
  if (reaped_) return;
  while (::waitpid(pid_, &status_, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  unregister_child(pid_);
}

void Subprocess::kill_all_from_signal_handler() {
  for (auto& slot : g_children)
    if (const pid_t pid = slot.load(); pid > 0) ::kill(-pid, SIGKILL);
}

void Subprocess::close_fd(int& fd) {
  if (fd >= 0) ::close(fd);
  fd = -1;
}

void Subprocess::drain_stderr() {
  char buf[4096];
  while (err_ >= 0) {
    const ssize_t got = ::read(err_, buf, sizeof buf);
    if (got > 0) {
      err_ring_.append(buf, static_cast<std::size_t>(got));
      if (err_ring_.size() > kStderrTail) err_ring_.erase(0, err_ring_.size() - kStderrTail);
      continue;
    }
    if (got == 0) close_fd(err_);  // the child closed it
    return;                        // EAGAIN: nothing more for now
  }
}

Subprocess::Exchange Subprocess::exchange(const std::string& text, std::size_t n, double timeout_s,
                                          const std::function<bool()>& stop) {
  Exchange ex;
  std::size_t written = 0;
  auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  const auto take_lines = [&] {
    std::size_t nl;
    while (ex.lines.size() < n && (nl = out_buffer_.find('\n')) != std::string::npos) {
      ex.lines.push_back(out_buffer_.substr(0, nl));
      out_buffer_.erase(0, nl + 1);
      deadline =
          Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
    }
  };
  take_lines();
  while (ex.lines.size() < n) {
    if (out_ < 0) {
      ex.eof = true;
      break;
    }
    pollfd fds[3];
    nfds_t count = 0;
    fds[count++] = {out_, POLLIN, 0};
    const bool err_open = err_ >= 0;
    if (err_open) fds[count++] = {err_, POLLIN, 0};
    const bool writing = written < text.size() && in_ >= 0;
    if (writing) fds[count++] = {in_, POLLOUT, 0};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) {
      ex.timed_out = true;
      break;
    }
    if (stop && stop()) {
      ex.interrupted = true;
      break;
    }
    if (out_buffer_.size() > kMaxPendingOutput) {
      ex.overflowed = true;
      break;
    }
    const int ready = ::poll(fds, count, static_cast<int>(std::min<long long>(left, 100)));
    if (ready < 0) {
      if (errno == EINTR) continue;
      fail("'", command_, "': poll: ", std::strerror(errno));
    }
    if (err_open && fds[1].revents) drain_stderr();
    if (writing && fds[count - 1].revents) {
      const ssize_t put = ::write(in_, text.data() + written, text.size() - written);
      if (put > 0) {
        written += static_cast<std::size_t>(put);
      } else if (put < 0 && errno != EAGAIN && errno != EINTR) {
        ex.write_failed = true;  // EPIPE: the child closed its stdin or died; its stdout says which
        close_fd(in_);
      }
    }
    if (fds[0].revents) {
      char buf[65536];
      const ssize_t got = ::read(out_, buf, sizeof buf);
      if (got > 0) {
        out_buffer_.append(buf, static_cast<std::size_t>(got));
        take_lines();
      } else if (got == 0 || (errno != EAGAIN && errno != EINTR)) {
        close_fd(out_);
      }
    } else if (ready == 0 && exited_within(0.0)) {
      // The child ended but something it started still holds its stdout open (a background process of a
      // shell script): no reply can come any more; what it had written was read before this quiet round.
      ex.eof = true;
      break;
    }
  }
  drain_stderr();
  return ex;
}

std::string Subprocess::stderr_tail() const { return err_ring_; }

std::string Subprocess::exit_status(double wait_s) {
  if (pid_ <= 0) return "not started";
  if (!reaped_) {
    if (!exited_within(wait_s)) return "still running";
    drain_stderr();  // its last words (for stderr_tail), still in the pipe
    kill();  // what it left running in its group ends with it, then it is reaped
  }
  if (WIFEXITED(status_)) return "exited with status " + std::to_string(WEXITSTATUS(status_));
  if (WIFSIGNALED(status_)) return "killed by signal " + std::to_string(WTERMSIG(status_));
  return "ended";
}

void Subprocess::kill() {
  if (pid_ <= 0 || reaped_) return;
  // The whole group (see the constructor), while the unreaped leader still holds its id.
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  reap();
}

}  // namespace gtpo::io
