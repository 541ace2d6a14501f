// The process's stop request: a signal handler (apps/run_setup.cpp) sets it, and whatever runs long (the
// trainer's steps, SFT, a reward process's wait) reads it and ends cleanly. Async-signal-safe.
#pragma once
#include <atomic>

namespace gtpo::rl {

inline std::atomic<int> g_stop_signal{0};  // lock-free: written from a signal handler

// Asks a running trainer to stop after the current step (SFT or RL) and write a final checkpoint; SIGNAL
// is the signal that asked (SIGINT, SIGTERM), kept for the exit code.
inline void request_stop(int signal) { g_stop_signal = signal; }
inline bool stop_requested() { return g_stop_signal.load() != 0; }
inline int stop_signal() { return g_stop_signal.load(); }  // 0 when no stop was requested

}  // namespace gtpo::rl
