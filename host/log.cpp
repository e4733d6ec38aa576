#include "host/log.hpp"

#include <unistd.h>

#include <atomic>
#include <mutex>
#include <string>

namespace toolhost::log {
namespace {
std::atomic<level> g_min{level::info};
std::mutex g_mutex;
}  // namespace

void set_level(level min) { g_min = min; }
level current_level() { return g_min; }

void write(level lvl, std::string_view component, std::string_view message) {
  if (lvl < g_min.load()) return;
  static constexpr const char* kNames[] = {"debug", "info", "warning", "error"};
  std::string line = "toolhost: ";
  if (lvl != level::info) line += std::string(kNames[static_cast<int>(lvl)]) + ": ";
  line += component;
  line += ": ";
  line += message;
  line += '\n';
  std::lock_guard lock(g_mutex);
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) return;  // stderr closed: nothing better to do
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace toolhost::log
