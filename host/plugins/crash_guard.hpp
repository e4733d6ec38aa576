// Runs a plugin's init so that a crash in it (a bad pointer, an abort) does not take the host
// down: the fault is caught on the same thread and reported as "init crashed", the way
// GStreamer guards plugin loading. The plugin's state may be damaged, so it is never used again.
#pragma once

#include <functional>

namespace toolhost::plugins {

// Runs `fn`. Returns 0 when it returned normally, or the number of the signal (SIGSEGV,
// SIGBUS, SIGILL, SIGFPE, SIGABRT) that interrupted it. Faults on other threads are not caught.
int run_guarded(const std::function<void()>& fn);

// "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE", "SIGABRT", or "a signal". Async-signal-safe: the fatal
// signal handler of host/mcp/fault_log.cpp names its signal with it too.
const char* signal_name(int sig);

}  // namespace toolhost::plugins
