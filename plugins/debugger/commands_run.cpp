// Run control: g, gh, gn, gu, p, t, pa, break, and the signal filters sx*.
#include <toolhost/sdk/json.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace signals = toolhost::signals;

absl::Status session::cmd_go(const std::string& name, std::string_view args) {
  if (!trim(args).empty()) {
    auto address = eval(args);
    if (!address.ok()) return usage_error(name, std::string(address.status().message()));
    if (auto s = target_->set_breakpoint(TOOLHOST_DT_BP_SOFTWARE, *address, 1); !s.ok()) return s;
    temporaries_.push_back({*address, std::nullopt});
  }
  // gh: the intercepted signal is handled here and dropped; gn: not handled, so delivered.
  std::optional<bool> deliver;
  if (name == "gh") deliver = false;
  if (name == "gn") deliver = true;
  return resume_and_wait(TOOLHOST_DT_CONTINUE, deliver);
}

absl::Status session::cmd_step(const std::string& name, std::string_view args) {
  uint64_t count = 1;
  if (!trim(args).empty()) {
    auto n = eval(args);
    if (!n.ok() || *n == 0 || *n > 0x10000) return usage_error(name, "the step count must be a number from 1 to 0x10000");
    count = *n;
  }
  for (uint64_t i = 0; i < count; ++i) {
    if (i > 0 && (running() || exited_)) break;
    if (i > 0 && clock::now() >= deadline_) break;
    auto s = name == "t" ? resume_and_wait(TOOLHOST_DT_STEP) : step_over_once();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status session::cmd_go_up(const std::string& name, std::string_view args) {
  if (!trim(args).empty()) return usage_error(name, "gu takes no arguments");
  std::map<uint64_t, std::string> pages;
  auto frames = walk_physical(2, pages);
  if (!frames.ok()) return frames.status();
  if (frames->size() < 2) return absl::NotFoundError("cannot find the return address of the current function");
  auto s = sp();
  if (!s.ok()) return s.status();
  const uint64_t ret = (*frames)[1].pc;
  if (auto st = target_->set_breakpoint(TOOLHOST_DT_BP_SOFTWARE, ret, 1); !st.ok()) return st;
  // The caller's stack pointer is above ours once the return has popped its address.
  temporaries_.push_back({ret, *s + 8});
  return resume_and_wait(TOOLHOST_DT_CONTINUE);
}

absl::Status session::cmd_step_to(const std::string& name, std::string_view args) {
  if (trim(args).empty()) return usage_error(name, "pa needs the address to stop at");
  auto target_address = eval(args);
  if (!target_address.ok()) return usage_error(name, std::string(target_address.status().message()));
  for (int steps = 0; steps < 100000; ++steps) {
    auto at = pc();
    if (!at.ok()) return at.status();
    if (*at == *target_address) return absl::OkStatus();
    if (clock::now() >= deadline_) {
      out_ += "pa: the time budget ran out before " + address_text(*target_address) + "; re-issue it to go on.\n";
      return absl::OkStatus();
    }
    // Only the final stop is rendered in full; each step prints its instruction.
    const size_t mark = out_.size();
    if (auto s = step_over_once(); !s.ok()) return s;
    if (running() || exited_) return absl::OkStatus();
    auto now = pc();
    if (!now.ok()) return now.status();
    if (*now != *target_address && last_stop_ && last_stop_->reason != TOOLHOST_DT_STOP_STEP &&
        last_stop_->reason != TOOLHOST_DT_STOP_BREAKPOINT) {
      return absl::OkStatus();  // a signal or break-in: stop stepping, keep its rendering
    }
    if (*now != *target_address) {
      out_.resize(mark);
      out_ += instruction_line(*now, false);
    }
  }
  return absl::OkStatus();
}

absl::Status session::cmd_break(const std::string& name, std::string_view args) {
  if (!trim(args).empty()) return usage_error(name, "break takes no arguments");
  if (!running()) {
    out_ += "The target is already halted.\n";
    return absl::OkStatus();
  }
  if (auto s = target_->interrupt(); !s.ok()) return s;
  auto stopped = wait_for_stop(deadline_);
  if (!stopped.ok()) return stopped.status();
  if (!*stopped) out_ += "The break-in was sent; the target has not stopped yet (the next halted-only command collects the stop).\n";
  return absl::OkStatus();
}

absl::Status session::cmd_sx(const std::string& name, std::string_view args) {
  const bool process = target_->kind() == "process" || target_->kind() == "dump";
  if (name == "sx" || name == "sxr") {
    if (!trim(args).empty()) return usage_error(name, name + " takes no arguments");
    if (name == "sxr") {
      signals_.reset();
      signals_dirty_ = true;
      out_ += "Signal filters are back to gdb's defaults.\n";
    }
    if (!process) {
      out_ += "(the " + target_->backend() + " target is a " + target_->kind() +
              ", not a process: it reports no POSIX signals, so these filters do not apply to it)\n";
    }
    out_ += signals_.listing();
    std::string json = R"({"signals":[)";
    bool first = true;
    for (const auto& s : signals::all()) {
      const auto& f = signals_.of(s.number);
      json += std::string(first ? "" : ",") + R"({"number":)" + std::to_string(s.number) + R"(,"name":)" +
              sdk::quote(s.name) + R"(,"break":)" + sdk::quote(status_word(f.on_arrival)) + R"(,"handled":)" +
              (f.handled ? "true" : "false") + "}";
      first = false;
    }
    result_json_ = json + "]}";
    return absl::OkStatus();
  }
  auto changed = signals_.apply(name, args);
  if (!changed.ok()) return usage_error(name, std::string(changed.status().message()));
  signals_dirty_ = true;
  out_ += *changed + "\n";
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
