#include "host/plugins/crash_guard.hpp"

#include <csetjmp>
#include <csignal>
#include <mutex>

namespace toolhost::plugins {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
thread_local sigjmp_buf* t_jump = nullptr;
thread_local volatile sig_atomic_t t_signal = 0;

void on_fault(int sig) {
  if (t_jump != nullptr) {
    t_signal = sig;
    siglongjmp(*t_jump, 1);
  }
  // Not inside a guarded call: behave as if we had never been installed.
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

const char* signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "a signal";
  }
}

int run_guarded(const std::function<void()>& fn) {
  // One guarded init at a time: the handlers are process-wide.
  static std::mutex mutex;
  std::lock_guard lock(mutex);

  struct sigaction action {};
  action.sa_handler = on_fault;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_NODEFER;
  struct sigaction saved[sizeof(kSignals) / sizeof(kSignals[0])];
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) sigaction(kSignals[i], &action, &saved[i]);

  sigjmp_buf jump;
  t_signal = 0;
  if (sigsetjmp(jump, 1) == 0) {
    t_jump = &jump;
    fn();
  }
  t_jump = nullptr;
  for (size_t i = 0; i < sizeof(kSignals) / sizeof(kSignals[0]); ++i) sigaction(kSignals[i], &saved[i], nullptr);
  return t_signal;
}

}  // namespace toolhost::plugins
