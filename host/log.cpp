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

repeated::repeated(level lvl, std::string component, std::chrono::steady_clock::duration interval)
    : level_(lvl), component_(std::move(component)), interval_(interval) {}

void repeated::note(std::string_view what) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  ++total_;
  latest_.assign(what);
  ++pending_;
  if (last_line_ == std::chrono::steady_clock::time_point{} || now - last_line_ >= interval_) report_locked(now);
}

void repeated::flush() {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (pending_ != 0 && now - last_line_ >= interval_) report_locked(now);
}

uint64_t repeated::total() const {
  std::lock_guard lock(mutex_);
  return total_;
}

void repeated::report_locked(std::chrono::steady_clock::time_point now) {
  const bool first = last_line_ == std::chrono::steady_clock::time_point{};
  std::string line = latest_;
  if (!first || pending_ > 1) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(interval_).count();
    line += " (" + std::to_string(pending_) + (pending_ == 1 ? " time" : " times") + " in the last " +
            std::to_string(seconds) + " s; " + std::to_string(total_) + " in all)";
  }
  write(level_, component_, line);
  last_line_ = now;
  pending_ = 0;
}

}  // namespace toolhost::log
