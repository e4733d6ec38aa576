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
    if (!n.ok() || *n == 0 || *n > 0x10000)
      return usage_error(name, "the step count must be a number from 1 to 0x10000");
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
  // A break-in already pending is sent again (a stub may have dropped it) but keeps its time.
  if (!break_sent_) break_sent_ = clock::now();
  if (auto s = target_->interrupt(); !s.ok()) return s;
  auto stopped = wait_for_stop(deadline_);
  if (!stopped.ok()) return stopped.status();
  if (!*stopped) return absl::DeadlineExceededError(break_in_failure());
  return absl::OkStatus();
}

std::string session::break_in_failure() const {
  const auto waited =
      break_sent_ ? std::chrono::duration_cast<std::chrono::milliseconds>(clock::now() - *break_sent_).count() : 0;
  std::string text = "The break-in sent " + std::to_string(waited) + " ms ago has not stopped the target: the " +
                     target_->backend() + " stub could not interrupt it.";
  const std::string pid = target_->hint("pid");
  if (target_->backend() == "gdb" && target_->kind() == "process") {
    // gdbserver interrupts by signalling the inferior's process group (kill(-pid, SIGINT)); a
    // process it attached to that leads no group of its own never receives it.
    if (target_->hint("attached") == "1") {
      text +=
          " gdbserver interrupts a process by signalling its process group, and this process (attached with "
          "`gdbserver --attach`) does not lead one.";
    }
    text += " Stop it from outside: `kill -INT " + (pid.empty() ? std::string("<pid>") : pid) +
            "` (the next command collects the stop), or set a breakpoint before resuming next time. A program "
            "started under gdbserver (`gdbserver HOST:PORT PROGRAM`) can always be interrupted.";
  } else {
    text += " Stop it by other means (the next command collects the stop).";
  }
  return text + " The break-in stays pending: a halted-only command waits for its stop.";
}

absl::Status session::cmd_quit(const std::string& name, std::string_view) {
  return absl::FailedPreconditionError(
      "'" + name +
      "' is refused here: it ends an interactive debugger, and this session belongs to the MCP "
      "server. `.detach` (or the close tool) removes the breakpoints, lets the target run on and releases it; "
      "the session ends when the server does.");
}

absl::Status session::cmd_detach(const std::string& name, std::string_view args) {
  if (!trim(args).empty()) return usage_error(name, ".detach takes no arguments");
  detach_requested_ = true;
  result_json_ = R"({"status":"detached"})";
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
