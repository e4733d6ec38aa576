#include "host/mcp/fault_log.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

#include "host/plugins/crash_guard.hpp"

namespace toolhost::mcp::fault_log {
namespace {

// What each running call is, preformatted so that the handler only copies bytes. More calls
// than slots still count in g_in_flight; they are just not named.
constexpr int kSlots = 1024;
struct slot {
  std::atomic<bool> used{false};
  char text[256] = {};
};
slot g_slots[kSlots];
std::atomic<int> g_in_flight{0};
thread_local int t_slot = -1;

// A signal stack per thread that runs calls, so that a call that overflows its stack is
// reported too; released when the thread ends.
struct alt_stack {
  void* memory = nullptr;
  ~alt_stack() {
    if (memory == nullptr) return;
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    sigaltstack(&off, nullptr);
    std::free(memory);
  }
  void ensure() {
    if (memory != nullptr) return;
    constexpr size_t kSize = 64 * 1024;
    memory = std::malloc(kSize);
    if (memory == nullptr) return;
    stack_t st{};
    st.ss_sp = memory;
    st.ss_size = kSize;
    if (sigaltstack(&st, nullptr) != 0) {
      std::free(memory);
      memory = nullptr;
    }
  }
};
thread_local alt_stack t_alt_stack;

// Async-signal-safe appending into a fixed buffer.
struct line {
  char buf[2048];
  size_t n = 0;
  void add(const char* s) {
    while (*s != '\0' && n + 1 < sizeof buf) buf[n++] = *s++;
  }
  void add(int v) {
    char digits[12];
    int k = 0;
    unsigned u = v < 0 ? static_cast<unsigned>(-v) : static_cast<unsigned>(v);
    do {
      digits[k++] = static_cast<char>('0' + u % 10);
      u /= 10;
    } while (u != 0 && k < 11);
    if (v < 0) add("-");
    while (k > 0 && n + 1 < sizeof buf) buf[n++] = digits[--k];
  }
  void flush() {
    add("\n");
    for (size_t done = 0; done < n;) {
      const ssize_t w = ::write(STDERR_FILENO, buf + done, n - done);
      if (w <= 0) return;
      done += static_cast<size_t>(w);
    }
  }
};

// The calls running on other threads, after the one that failed.
void add_others(line& l) {
  int listed = 0;
  for (int i = 0; i < kSlots && listed < 8; ++i) {
    if (i == t_slot || !g_slots[i].used.load(std::memory_order_acquire)) continue;
    l.add(listed == 0 ? " Also running, and lost with it: " : "; ");
    l.add(g_slots[i].text);
    ++listed;
  }
  if (listed > 0) l.add(".");
}

void on_fatal(int sig, siginfo_t*, void*) {
  line l;
  l.add("toolhost: error: fault: ");
  l.add(plugins::signal_name(sig));
  l.add(" (signal ");
  l.add(sig);
  l.add(")");
  if (t_slot >= 0) {
    l.add(" in ");
    l.add(g_slots[t_slot].text);
  } else {
    l.add(g_in_flight.load() > 0 ? " on a thread that runs no call" : " while no call was running");
  }
  l.add("; toolhost stops, since plugins run inside it and its state may be damaged.");
  add_others(l);
  l.flush();
  // The default action ends the process with this signal's status once the handler returns
  // (a fault re-executes; abort() raises again).
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void on_exit_during_call() {
  if (g_in_flight.load() == 0) return;  // toolhost's own exits
  line l;
  l.add("toolhost: error: fault: ");
  if (t_slot >= 0) {
    l.add(g_slots[t_slot].text);
  } else {
    l.add("a plugin");
  }
  l.add(" called exit() while calls were running, which would look like a clean exit; toolhost stops with ");
  l.add("status 70 instead.");
  add_others(l);
  l.flush();
  ::_exit(70);
}

}  // namespace

void install() {
  struct sigaction action {};
  action.sa_sigaction = on_fatal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  for (int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT}) sigaction(sig, &action, nullptr);
  std::atexit(on_exit_during_call);
  std::at_quick_exit(on_exit_during_call);
}

in_call::in_call(std::string_view what, std::string_view name, std::string_view plugin, std::string_view server)
    : slot_(t_slot) {
  t_alt_stack.ensure();
  g_in_flight.fetch_add(1);
  for (int i = 0; i < kSlots; ++i) {
    bool expected = false;
    if (g_slots[i].used.load(std::memory_order_relaxed) ||
        !g_slots[i].used.compare_exchange_strong(expected, true, std::memory_order_acquire)) {
      continue;
    }
    // Copied piece by piece, cut at the slot's size: snprintf's format parsing was ~1,750
    // instructions of every call (callgrind, bench/mcp's echo), this is a tenth of it.
    char* text = g_slots[i].text;
    size_t used = 0;
    for (std::string_view piece : {what, std::string_view(" '"), name, std::string_view("' of plugin '"), plugin,
                                   std::string_view("' (server '"), server, std::string_view("')")}) {
      const size_t take = std::min(piece.size(), sizeof g_slots[i].text - 1 - used);
      std::memcpy(text + used, piece.data(), take);
      used += take;
    }
    text[used] = '\0';
    t_slot = i;
    return;
  }
  t_slot = -1;
}

in_call::~in_call() {
  if (t_slot >= 0) g_slots[t_slot].used.store(false, std::memory_order_release);
  t_slot = slot_;
  g_in_flight.fetch_sub(1);
}

}  // namespace toolhost::mcp::fault_log
