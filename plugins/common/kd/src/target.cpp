#include "toolhost/kd/target.h"

#include <algorithm>
#include <cstdio>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>

#include "toolhost/kd/bytes.h"
#include "toolhost/kd/protocol.h"

namespace toolhost::kd {
namespace {

using clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr size_t kMaxOutputLines = 4096;
constexpr uint32_t kBreakpointTableSize = 32;  // KdpBreakpointTable entries
constexpr size_t kMaxTransfer = kMaxPayload - kManipulateSize;

bool failed(uint32_t status) { return (status & 0x80000000u) != 0; }

std::string hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

std::string exception_name(uint32_t code) {
  switch (code) {
    case kStatusBreakpoint: return "Break instruction exception";
    case kStatusSingleStep: return "Single step exception";
    case 0xC0000005: return "Access violation";
    case 0xC000001D: return "Illegal instruction";
    case 0xC0000094: return "Integer divide-by-zero";
    default: return "Exception";
  }
}

std::vector<uint8_t> union_of(std::initializer_list<std::pair<size_t, uint64_t>> fields32,
                              std::initializer_list<std::pair<size_t, uint64_t>> fields64 = {}) {
  std::vector<uint8_t> u(40, 0);
  for (auto [at, v] : fields32) put_u32(u, at, static_cast<uint32_t>(v));
  for (auto [at, v] : fields64) put_u64(u, at, v);
  return u;
}

}  // namespace

target::target(std::unique_ptr<link> l, target_options options) : link_(std::move(l)), options_(options) {}

target::~target() {
  if (!detached_) (void)detach();
  if (pump_.joinable()) pump_.join();
}

absl::StatusOr<std::unique_ptr<target>> target::attach(std::unique_ptr<link> l, target_options options) {
  std::unique_ptr<target> t(new target(std::move(l), options));
  if (auto s = t->establish(); !s.ok()) {
    // A target that never stopped for us has nothing to resume or clean up; talking to it now
    // would only hold the error back by the detach's retries.
    if (!t->halted_once_) t->detached_ = true;
    return s;
  }
  return t;
}

absl::Status target::establish() {
  const auto started = clock::now();
  const auto deadline = started + options_.attach_timeout;
  const link_stats before = link_->stats();
  int our_resets = 0, break_ins = 0, resyncs = 0;
  auto left = [&] {
    return std::max(milliseconds(0), std::chrono::duration_cast<milliseconds>(deadline - clock::now()));
  };
  auto waited = [&] {
    return absl::StrFormat("%.1f s", std::chrono::duration<double>(clock::now() - started).count());
  };
  // The one sentence an attach that cannot proceed ends with: what came from the target in the wait.
  auto give_up = [&](std::string_view what) {
    const link_stats now = link_->stats();
    const uint64_t target_resets = now.resets - before.resets - static_cast<uint64_t>(our_resets);
    const uint64_t packets = now.received - before.received;
    const uint64_t bad = now.bad_packets - before.bad_packets;
    if (target_resets > 8) {
      return absl::UnavailableError(absl::StrFormat(
          "The target on %s answered with RESET %u times in %s and never settled: another debugger may be attached "
          "to it, or the line is too noisy.",
          link_->describe(), target_resets, waited()));
    }
    if (packets == 0 && bad == 0) {
      return absl::DeadlineExceededError(
          absl::StrFormat("No KD packet came from %s in %s (after %d RESETs and %d break-ins): check that the target "
                          "booted with kernel "
                          "debugging on this port (bcdedit /debug on, /dbgsettings).",
                          link_->describe(), waited(), our_resets, break_ins));
    }
    return absl::DeadlineExceededError(absl::StrFormat("The target on %s sent %u packets (%u damaged) in %s but %s.",
                                                       link_->describe(), packets, bad, waited(), what));
  };

  // A line that takes none of our bytes is, to the user, as silent as one that sends none.
  auto wrote = [&](absl::Status s) {
    return absl::IsDeadlineExceeded(s) ? give_up(absl::StrFormat("stopped taking bytes (%s)", s.message())) : s;
  };
  absl::StatusOr<state_change> state = absl::DeadlineExceededError("");
  while (true) {
    // A halted target answers our RESET with its state change; a running one is broken into.
    if (auto s = link_->reset(); !s.ok()) return wrote(s);
    ++our_resets;
    bool restarted = false;
    state = wait_state_change(std::min(options_.attach_wait, left()), &restarted);
    while (absl::IsDeadlineExceeded(state.status()) && left().count() > 0) {
      interrupt_requested_ = true;
      if (auto s = link_->break_in(); !s.ok()) return wrote(s);
      ++break_ins;
      state = wait_state_change(std::min(milliseconds(1000), left()), &restarted);
      // A halted target whose report we missed waits silently; another RESET wakes it.
      if (absl::IsDeadlineExceeded(state.status()) && left().count() > 0) {
        if (auto s = link_->reset(); !s.ok()) return wrote(s);
        ++our_resets;
        state = wait_state_change(std::min(milliseconds(250), left()), &restarted);
      }
    }
    if (!state.ok()) {
      if (!absl::IsDeadlineExceeded(state.status())) return state.status();
      return give_up(absl::StrFormat("did not stop (%d break-ins sent)", break_ins));
    }
    on_halt(*state);
    // The first request. Packet ids out of step with the target show here as a request nobody
    // answers: reset the link and start over.
    auto version = get_version();
    if (version.ok()) break;
    if (!absl::IsDeadlineExceeded(version.status()) || left().count() == 0) {
      if (absl::IsDeadlineExceeded(version.status())) {
        return give_up(absl::StrFormat("did not answer GetVersion (%d resynchronizations)", resyncs));
      }
      return version.status();
    }
    ++resyncs;
  }
  dr7_base_ = last_state_.dr7 & ~0xFFFF00FFull;  // keep the bits that are not slot enables or types
  if (version_.machine != kMachineAmd64) {
    return absl::UnimplementedError(absl::StrFormat(
        "The target's machine type is 0x%04x; this backend supports AMD64 (0x8664) targets only.", version_.machine));
  }
  // A debugger that died left its entries in the target's breakpoint table; release them all.
  for (uint32_t handle = 1; handle <= kBreakpointTableSize; ++handle) {
    request_spec r{kApiRestoreBreakPoint, current_processor_, union_of({{0, handle}})};
    auto got = request(r);
    if (!got.ok()) return got.status();
  }
  {
    std::lock_guard lock(stop_mutex_);
    pending_stop_ = classify(last_state_, false);
  }
  interrupt_requested_ = false;
  return absl::OkStatus();
}

absl::Status target::require_halted(const char* what) const {
  if (lost_)
    return absl::UnavailableError(absl::StrCat("The KD connection is lost; cannot ", what, ". Close and open again."));
  if (running_)
    return absl::FailedPreconditionError(absl::StrCat("The target is running; break in before you ", what, "."));
  return absl::OkStatus();
}

absl::StatusOr<target::reply> target::request(const request_spec& spec) {
  const bool reads = spec.api == kApiReadVirtual || spec.api == kApiReadPhysical || spec.api == kApiGetContext ||
                     spec.api == kApiReadControlSpace || spec.api == kApiGetVersion || spec.api == kApiReadMsr;
  if (!reads) ++memory_epoch_;
  std::vector<uint8_t> payload(kManipulateSize + spec.data.size(), 0);
  put_u32(payload, 0, spec.api);
  put_u16(payload, 6, spec.processor);
  std::copy(spec.union_bytes.begin(), spec.union_bytes.end(), payload.begin() + kManipulateUnion);
  std::copy(spec.data.begin(), spec.data.end(), payload.begin() + kManipulateSize);
  const int tries = spec.idempotent ? options_.request_retries + 1 : 1;
  int overtaking = 0, sends = 0;
  bool short_wait_used = false;
  for (int attempt = 0; attempt < tries; ++attempt) {
    const link_stats before = link_->stats();
    ++sends;
    if (auto s = link_->send(kTypeStateManipulate, payload); !s.ok()) {
      if (absl::IsUnavailable(s)) lost_ = true;
      return s;
    }
    if (!spec.expect_reply) return reply{};
    // A copy that needed sending again may have been answered while the target waited for our
    // ACK, which then counts the next copy as that ACK (kddll): the reply is gone for good. Such
    // a request waits a short while and goes again, once, without using up a retry.
    const link_stats after = link_->stats();
    const bool short_wait =
        !short_wait_used && (after.retransmits > before.retransmits || after.resend_requests > before.resend_requests);
    short_wait_used = short_wait_used || short_wait;
    const auto deadline = clock::now() + (short_wait ? std::min(options_.dropped_reply_wait, options_.request_timeout)
                                                     : options_.request_timeout);
    bool send_again = false;
    while (!send_again) {
      const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock::now());
      if (left.count() <= 0) break;
      auto in = link_->receive(left);
      if (!in.ok()) {
        if (absl::IsDeadlineExceeded(in.status())) break;
        if (absl::IsUnavailable(in.status())) lost_ = true;
        return in.status();
      }
      const packet& p = in->pkt;
      if (in->target_restarted) {
        auto s = decode_state_change(p.payload);
        if (s.ok()) {
          forget_target_state();
          on_halt(*s);
          std::lock_guard lock(stop_mutex_);
          pending_stop_ = classify(*s, true);
        }
        return absl::AbortedError("The target rebooted during the request; its state must be rediscovered.");
      }
      if (p.type == kTypeStateChange64) {
        // The target's wait loop started over (after a RESET, a RESEND, or a new stop): it
        // dropped the request, so the report is its current state and the request goes again.
        auto s = decode_state_change(p.payload);
        if (!s.ok()) continue;
        take_state_change(*s);
        if (++overtaking > options_.max_overtaking_reports) {
          return absl::UnavailableError(absl::StrFormat(
              "The target reported its state %d times instead of answering KD request 0x%04x over %s; close and open "
              "again.",
              overtaking, spec.api, link_->describe()));
        }
        send_again = true;
        --attempt;  // not a lost reply
        break;
      }
      if (p.type == kTypeDebugIo) {
        on_debug_io(p.payload);
        continue;
      }
      if (p.type != kTypeStateManipulate || p.payload.size() < kManipulateSize) continue;
      if (get_u32(p.payload, 0) != spec.api || get_u16(p.payload, 6) != spec.processor) continue;
      // A late reply to an earlier copy of another request with the same API: drop it. These
      // APIs echo what names their object (an address, a handle, an MSR) first in the union.
      const bool by_address = spec.api == kApiReadVirtual || spec.api == kApiReadPhysical ||
                              spec.api == kApiWriteVirtual || spec.api == kApiWritePhysical ||
                              spec.api == kApiReadControlSpace || spec.api == kApiWriteControlSpace ||
                              spec.api == kApiWriteBreakPoint;
      const bool by_number = spec.api == kApiRestoreBreakPoint || spec.api == kApiReadMsr || spec.api == kApiWriteMsr;
      if (!spec.union_bytes.empty() &&
          ((by_address && get_u64(p.payload, kManipulateUnion) != get_u64(spec.union_bytes, 0)) ||
           (by_number && get_u32(p.payload, kManipulateUnion) != get_u32(spec.union_bytes, 0)))) {
        continue;
      }
      reply r;
      r.status = get_u32(p.payload, 8);
      r.union_bytes.assign(p.payload.begin() + kManipulateUnion, p.payload.begin() + kManipulateSize);
      r.data.assign(p.payload.begin() + kManipulateSize, p.payload.end());
      r.repeated = sends > 1;
      return r;
    }
    if (short_wait && !send_again) --attempt;
  }
  return absl::DeadlineExceededError(
      absl::StrFormat("The target sent no reply to KD request 0x%04x within %d ms over %s.", spec.api,
                      options_.request_timeout.count(), link_->describe()));
}

absl::StatusOr<state_change> target::wait_state_change(milliseconds timeout, bool* restarted) {
  const auto deadline = clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - clock::now());
    if (left.count() <= 0) return absl::DeadlineExceededError("No state change arrived.");
    auto in = link_->receive(left);
    if (!in.ok()) {
      if (absl::IsUnavailable(in.status())) lost_ = true;
      return in.status();
    }
    if (in->pkt.type == kTypeDebugIo) {
      on_debug_io(in->pkt.payload);
      continue;
    }
    if (in->pkt.type != kTypeStateChange64) continue;
    auto s = decode_state_change(in->pkt.payload);
    if (!s.ok()) continue;
    if (restarted != nullptr) *restarted = in->target_restarted;
    return s;
  }
}

void target::on_debug_io(std::span<const uint8_t> p) {
  if (p.size() < kDebugIoSize) return;
  const uint32_t api = get_u32(p, 0);
  if (api == kDebugIoGetString) {
    // We have no console to prompt; answer with an empty string so the target goes on.
    std::vector<uint8_t> answer(p.begin(), p.begin() + kDebugIoSize);
    put_u32(answer, 12, 0);
    (void)link_->send(kTypeDebugIo, answer);
    return;
  }
  if (api != kDebugIoPrintString) return;
  const size_t length = std::min<size_t>(get_u32(p, 8), p.size() - kDebugIoSize);
  std::string text(reinterpret_cast<const char*>(p.data() + kDebugIoSize), length);
  while (!text.empty() && text.back() == '\0') text.pop_back();
  std::lock_guard lock(output_mutex_);
  if (text.find("Fatal System Error") != std::string::npos || !bugcheck_text_.empty()) bugcheck_text_ += text;
  partial_line_ += text;
  size_t nl;
  while ((nl = partial_line_.find('\n')) != std::string::npos) {
    std::string line = partial_line_.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    output_.push_back(std::move(line));
    partial_line_.erase(0, nl + 1);
  }
  if (output_.size() > kMaxOutputLines) output_.erase(output_.begin(), output_.end() - kMaxOutputLines);
}

std::vector<std::string> target::take_output() {
  std::lock_guard lock(output_mutex_);
  std::vector<std::string> out;
  out.swap(output_);
  return out;
}

std::vector<module_event> target::modules() const {
  std::lock_guard lock(output_mutex_);
  return modules_;
}

void target::take_state_change(const state_change& s) {
  const bool repeat = s.raw == last_state_.raw;
  on_halt(s);
  if (repeat) return;
  std::lock_guard lock(stop_mutex_);
  pending_stop_ = classify(s, false);
}

void target::on_halt(const state_change& s) {
  halted_once_ = true;
  ++memory_epoch_;
  last_state_ = s;
  current_processor_ = s.processor;
  processor_count_ = std::max<uint32_t>(1, s.processor_count);
  // The target removed its own table entries from the reported instruction stream, so an int3
  // there is in the code itself.
  hardcoded_breaks_.erase(s.processor);
  if (s.new_state == kStateException && s.exception_code == kStatusBreakpoint && !s.instruction_stream.empty() &&
      s.instruction_stream[0] == 0xCC) {
    hardcoded_breaks_[s.processor] = s.pc;
  }
  // The target deletes its table entries inside the instruction stream it reports; they are
  // written again before the next resume.
  const uint64_t end = s.pc + std::max<size_t>(1, s.instruction_stream.size());
  for (auto& [address, bp] : breakpoints_) {
    if (address >= s.pc && address < end) bp.handle.reset();
  }
  if (s.new_state == kStateLoadSymbols) {
    std::lock_guard lock(output_mutex_);
    std::erase_if(modules_, [&](const module_event& m) { return m.base == s.module_base; });
    if (!s.module_unload) modules_.push_back({s.module_path, s.module_base, s.module_size, false});
  }
}

void target::forget_target_state() {
  for (auto& [address, bp] : breakpoints_) bp.handle.reset();
  for (const hw_slot& slot : hw_) hw_applied_ = hw_applied_ && !slot.used;
  std::lock_guard lock(output_mutex_);
  modules_.clear();
}

stop_event target::classify(const state_change& s, bool restarted) {
  stop_event e;
  e.processor = s.processor;
  e.pc = s.pc;
  if (restarted) {
    e.why = stop_event::reason::reboot;
    e.description = "The target rebooted: its KD packet stream restarted and its breakpoints are gone";
    return e;
  }
  if (s.new_state == kStateLoadSymbols) {
    e.why = stop_event::reason::module_load;
    e.description = absl::StrCat(s.module_unload ? "Unload " : "Load ", s.module_path, " at ", hex(s.module_base));
    return e;
  }
  if (s.new_state == kStateCommandString) {
    e.why = stop_event::reason::exception;
    e.description = "Command string from the target";
    return e;
  }
  e.code = s.exception_code;
  std::string fatal;
  {
    std::lock_guard lock(output_mutex_);
    fatal = bugcheck_text_;
  }
  const bool caused = bugcheck_caused_.exchange(false);
  if ((!fatal.empty() || caused) && s.exception_code == kStatusBreakpoint) {
    // KeBugCheckEx prints "*** Fatal System Error: 0xCODE (P1,P2,P3,P4)" and then breaks in.
    // On a lossy link that message can be lost for good: kddll, waiting for its ACK, takes our
    // resent request as one and moves on. A bugcheck we caused is then still known: 0xE2, zeros.
    e.why = stop_event::reason::bugcheck;
    if (fatal.empty()) {
      e.code = kManuallyInitiatedCrash;
      e.bugcheck_parameters.assign(4, 0);
    }
    const size_t at = fatal.find("Fatal System Error: ");
    if (at != std::string::npos) {
      unsigned long long code = 0, p[4] = {0, 0, 0, 0};
      const int n =
          std::sscanf(fatal.c_str() + at + 20, "%llx%*[^(](%llx,%llx,%llx,%llx)", &code, &p[0], &p[1], &p[2], &p[3]);
      if (n >= 1) e.code = code;
      if (n == 5) e.bugcheck_parameters.assign(p, p + 4);
    }
    e.description = absl::StrFormat("Bugcheck 0x%08X", e.code);
    return e;
  }
  const uint64_t hit_slots = s.exception_code == kStatusSingleStep ? (s.dr6 & 0xF) : 0;
  for (int n = 0; n < 4 && hit_slots != 0; ++n) {
    if ((hit_slots & (1u << n)) == 0 || !hw_[n].used) continue;
    if (hw_[n].kind == hw_kind::execute) {
      e.why = stop_event::reason::breakpoint;
      e.description = absl::StrCat("Hardware breakpoint at ", hex(hw_[n].address));
    } else {
      e.why = stop_event::reason::watchpoint;
      e.address = hw_[n].address;
      e.description =
          absl::StrFormat("%s watchpoint on 0x%x (%u bytes), stopped after the access",
                          hw_[n].kind == hw_kind::write ? "Write" : "Access", hw_[n].address, hw_[n].length);
    }
    return e;
  }
  if (s.exception_code == kStatusBreakpoint && breakpoints_.contains(s.pc)) {
    e.why = stop_event::reason::breakpoint;
    e.description = absl::StrCat("Breakpoint at ", hex(s.pc));
  } else if (s.exception_code == kStatusSingleStep && stepping_) {
    e.why = stop_event::reason::step;
    e.description = "Single step";
  } else if (s.exception_code == kStatusBreakpoint && interrupt_requested_ && hardcoded_breaks_.contains(s.processor)) {
    // A break-in enters DbgBreakPointWithStatus; a breakpoint hit elsewhere is not ours to claim.
    e.why = stop_event::reason::interrupt;
    e.description = "Break-in";
  } else {
    e.why = stop_event::reason::exception;
    e.description = absl::StrFormat("%s - code %08x (%s chance)", exception_name(s.exception_code), s.exception_code,
                                    s.first_chance ? "first" : "second");
  }
  return e;
}

// ---- Manipulate APIs ------------------------------------------------------------------------

absl::StatusOr<version_info> target::get_version() {
  if (auto s = require_halted("read the version"); !s.ok()) return s;
  auto r = request({kApiGetVersion, current_processor_, union_of({})});
  if (!r.ok()) return r.status();
  if (failed(r->status))
    return absl::InternalError(absl::StrFormat("GetVersion failed with status 0x%08x.", r->status));
  version_ = decode_version(r->union_bytes);
  return version_;
}

absl::StatusOr<size_t> target::read_memory(uint32_t api, uint64_t address, std::span<uint8_t> buffer) {
  if (auto s = require_halted("read memory"); !s.ok()) return s;
  size_t done = 0;
  while (done < buffer.size()) {
    const uint32_t want = static_cast<uint32_t>(std::min(kMaxTransfer, buffer.size() - done));
    auto r = request({api, current_processor_, union_of({{8, want}}, {{0, address + done}})});
    if (!r.ok()) return r.status();
    const uint32_t got = std::min<uint32_t>({get_u32(r->union_bytes, 12), want, static_cast<uint32_t>(r->data.size())});
    if (failed(r->status) && got == 0) break;
    std::copy(r->data.begin(), r->data.begin() + got, buffer.begin() + done);
    done += got;
    if (got < want) break;
  }
  return done;
}

absl::Status target::write_memory(uint32_t api, uint64_t address, std::span<const uint8_t> data) {
  if (auto s = require_halted("write memory"); !s.ok()) return s;
  size_t done = 0;
  while (done < data.size()) {
    const uint32_t n = static_cast<uint32_t>(std::min(kMaxTransfer, data.size() - done));
    auto r = request({api, current_processor_, union_of({{8, n}}, {{0, address + done}}), data.subspan(done, n)});
    if (!r.ok()) return r.status();
    const uint32_t written = get_u32(r->union_bytes, 12);
    if (failed(r->status) || written < n) {
      return absl::NotFoundError(absl::StrFormat(
          "The target wrote %u of %u bytes at 0x%x (status 0x%08x): the page is not mapped or not writable.", written,
          n, address + done, r->status));
    }
    done += n;
  }
  return absl::OkStatus();
}

absl::StatusOr<size_t> target::read_virtual(uint64_t a, std::span<uint8_t> b) {
  return read_memory(kApiReadVirtual, a, b);
}
absl::StatusOr<size_t> target::read_physical(uint64_t a, std::span<uint8_t> b) {
  if (!options_.read_cache) return read_memory(kApiReadPhysical, a, b);
  if (auto s = require_halted("read memory"); !s.ok()) return s;
  std::lock_guard lock(cache_mutex_);
  const uint64_t epoch = memory_epoch_;
  if (cache_epoch_ != epoch) physical_cache_.clear();
  cache_epoch_ = epoch;
  auto got = physical_cache_.read(
      a, b, [this](uint64_t address, std::span<uint8_t> into) { return read_memory(kApiReadPhysical, address, into); });
  // A stop that arrived during the reads may have changed what the first ones returned.
  if (memory_epoch_ != epoch) physical_cache_.clear();
  return got;
}
absl::Status target::write_virtual(uint64_t a, std::span<const uint8_t> d) {
  return write_memory(kApiWriteVirtual, a, d);
}
absl::Status target::write_physical(uint64_t a, std::span<const uint8_t> d) {
  return write_memory(kApiWritePhysical, a, d);
}

absl::StatusOr<std::vector<uint8_t>> target::get_context(uint16_t processor) {
  if (auto s = require_halted("read registers"); !s.ok()) return s;
  if (processor >= processor_count_) {
    return absl::InvalidArgumentError(
        absl::StrCat("Processor ", processor, " does not exist; the target has ", processor_count_, "."));
  }
  auto r = request({kApiGetContext, processor, union_of({{0, kContextFull}})});
  if (!r.ok()) return r.status();
  if (failed(r->status) || r->data.size() < kContextSize) {
    return absl::InternalError(
        absl::StrFormat("GetContext failed (status 0x%08x, %u bytes).", r->status, r->data.size()));
  }
  r->data.resize(kContextSize);
  return std::move(r->data);
}

absl::Status target::set_context(uint16_t processor, std::span<const uint8_t> context) {
  if (auto s = require_halted("write registers"); !s.ok()) return s;
  if (context.size() > 0x3000) return absl::InvalidArgumentError("A context is at most 0x3000 bytes.");
  const uint32_t total = static_cast<uint32_t>(context.size());
  for (uint32_t offset = 0; offset < total; offset += kSetContextChunk) {
    const uint32_t n = std::min<uint32_t>(kSetContextChunk, total - offset);
    // SetContextEx quirk: BytesCopied carries the total; the target commits on the last chunk.
    auto r =
        request({kApiSetContextEx, processor, union_of({{0, offset}, {4, n}, {8, total}}), context.subspan(offset, n)});
    if (!r.ok()) return r.status();
    if (failed(r->status))
      return absl::InternalError(
          absl::StrFormat("SetContextEx failed at offset %u with status 0x%08x.", offset, r->status));
  }
  const uint64_t rip = get_u64(context, kContextRip);
  if (processor == current_processor_) last_state_.pc = rip;
  if (auto it = hardcoded_breaks_.find(processor); it != hardcoded_breaks_.end() && it->second != rip) {
    hardcoded_breaks_.erase(it);  // rip was moved by hand
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint8_t>> target::read_control_space(uint16_t processor, uint64_t address, uint32_t size) {
  if (auto s = require_halted("read control space"); !s.ok()) return s;
  auto r = request({kApiReadControlSpace, processor, union_of({{8, size}}, {{0, address}})});
  if (!r.ok()) return r.status();
  const uint32_t got = std::min<uint32_t>(get_u32(r->union_bytes, 12), static_cast<uint32_t>(r->data.size()));
  if (failed(r->status) || got < size) {
    return absl::InternalError(
        absl::StrFormat("ReadControlSpace %u failed (status 0x%08x, %u of %u bytes).", address, r->status, got, size));
  }
  r->data.resize(size);
  return std::move(r->data);
}

absl::Status target::write_control_space(uint16_t processor, uint64_t address, std::span<const uint8_t> data) {
  if (auto s = require_halted("write control space"); !s.ok()) return s;
  auto r = request({kApiWriteControlSpace, processor, union_of({{8, data.size()}}, {{0, address}}), data});
  if (!r.ok()) return r.status();
  if (failed(r->status))
    return absl::InternalError(absl::StrFormat("WriteControlSpace failed with status 0x%08x.", r->status));
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> target::read_msr(uint16_t processor, uint32_t msr) {
  if (auto s = require_halted("read an MSR"); !s.ok()) return s;
  auto r = request({kApiReadMsr, processor, union_of({{0, msr}})});
  if (!r.ok()) return r.status();
  if (failed(r->status))
    return absl::NotFoundError(absl::StrFormat("Reading MSR 0x%x failed with status 0x%08x.", msr, r->status));
  return static_cast<uint64_t>(get_u32(r->union_bytes, 8)) << 32 | get_u32(r->union_bytes, 4);
}

absl::Status target::write_msr(uint16_t processor, uint32_t msr, uint64_t value) {
  if (auto s = require_halted("write an MSR"); !s.ok()) return s;
  auto r = request({kApiWriteMsr, processor, union_of({{0, msr}, {4, value & 0xFFFFFFFFu}, {8, value >> 32}})});
  if (!r.ok()) return r.status();
  if (failed(r->status))
    return absl::NotFoundError(absl::StrFormat("Writing MSR 0x%x failed with status 0x%08x.", msr, r->status));
  return absl::OkStatus();
}

absl::Status target::switch_processor(uint16_t processor) {
  if (auto s = require_halted("switch processors"); !s.ok()) return s;
  if (processor >= processor_count_) {
    return absl::InvalidArgumentError(
        absl::StrCat("Processor ", processor, " does not exist; the target has ", processor_count_, "."));
  }
  if (processor == current_processor_) return absl::OkStatus();
  auto r = request({kApiSwitchProcessor, processor, union_of({}), {}, false, false});
  if (!r.ok()) return r.status();
  bool restarted = false;
  auto s = wait_state_change(options_.request_timeout, &restarted);
  if (!s.ok()) return s.status();
  on_halt(*s);
  if (s->processor != processor) {
    return absl::InternalError(
        absl::StrCat("Asked for processor ", processor, " but the target reported from ", s->processor, "."));
  }
  return absl::OkStatus();
}

absl::Status target::reboot() {
  if (auto s = require_halted("reboot"); !s.ok()) return s;
  auto r = request({kApiReboot, current_processor_, union_of({}), {}, false, false});
  if (!r.ok()) return r.status();
  stepping_ = false;
  start_pump();
  return absl::OkStatus();
}

absl::Status target::cause_bugcheck() {
  if (auto s = require_halted("cause a bugcheck"); !s.ok()) return s;
  {
    std::lock_guard lock(output_mutex_);
    bugcheck_text_.clear();
  }
  bugcheck_caused_ = true;
  auto r = request({kApiCauseBugCheck, current_processor_, union_of({}), {}, false, false});
  if (!r.ok()) {
    bugcheck_caused_ = false;
    return r.status();
  }
  stepping_ = false;
  start_pump();
  return absl::OkStatus();
}

// ---- Breakpoints ----------------------------------------------------------------------------

absl::StatusOr<uint32_t> target::write_breakpoint(uint64_t address) {
  const request_spec write{kApiWriteBreakPoint, current_processor_, union_of({}, {{0, address}})};
  auto r = request(write);
  if (!r.ok()) return r.status();
  if (failed(r->status) && r->repeated) {
    // The first copy may have been carried out before the target started over, and a second
    // entry at the same address is refused (KdpAddBreakpoint). The table holds only our entries
    // (attach released the rest), and the target takes the lowest free one: release that one
    // and write again.
    uint32_t candidate = 1;
    for (bool taken = true; taken && candidate <= kBreakpointTableSize;) {
      taken = std::any_of(breakpoints_.begin(), breakpoints_.end(),
                          [&](const auto& bp) { return bp.second.handle == candidate; });
      if (taken) ++candidate;
    }
    auto released = request({kApiRestoreBreakPoint, current_processor_, union_of({{0, candidate}})});
    if (!released.ok()) return released.status();
    r = request(write);
    if (!r.ok()) return r.status();
  }
  if (failed(r->status)) {
    return absl::NotFoundError(absl::StrFormat(
        "The target refused a breakpoint at 0x%x (status 0x%08x): the address is not mapped or the table is full.",
        address, r->status));
  }
  return get_u32(r->union_bytes, 8);
}

absl::Status target::set_breakpoint(uint64_t address) {
  if (auto s = require_halted("set a breakpoint"); !s.ok()) return s;
  if (breakpoints_.contains(address)) return absl::OkStatus();
  auto handle = write_breakpoint(address);
  if (!handle.ok()) return handle.status();
  breakpoints_[address].handle = *handle;
  return absl::OkStatus();
}

absl::Status target::clear_breakpoint(uint64_t address) {
  if (auto s = require_halted("clear a breakpoint"); !s.ok()) return s;
  auto it = breakpoints_.find(address);
  if (it == breakpoints_.end()) return absl::NotFoundError(absl::StrFormat("There is no breakpoint at 0x%x.", address));
  if (it->second.handle) {
    auto r = request({kApiRestoreBreakPoint, current_processor_, union_of({{0, *it->second.handle}})});
    if (!r.ok()) return r.status();
  }
  breakpoints_.erase(it);
  return absl::OkStatus();
}

std::vector<uint64_t> target::breakpoints() const {
  std::vector<uint64_t> out;
  for (const auto& [address, bp] : breakpoints_) out.push_back(address);
  return out;
}

absl::Status target::rearm_breakpoints(std::optional<uint64_t> except) {
  for (auto& [address, bp] : breakpoints_) {
    if (except && address == *except) {
      if (bp.handle) {
        auto r = request({kApiRestoreBreakPoint, current_processor_, union_of({{0, *bp.handle}})});
        if (!r.ok()) return r.status();
        bp.handle.reset();
      }
      continue;
    }
    if (bp.handle) continue;
    auto handle = write_breakpoint(address);
    if (!handle.ok()) return handle.status();
    bp.handle = *handle;
  }
  return absl::OkStatus();
}

// ---- Hardware breakpoints -------------------------------------------------------------------

uint64_t target::compute_dr7(std::optional<uint64_t> skip_execute_at) const {
  uint64_t dr7 = dr7_base_;
  for (int n = 0; n < 4; ++n) {
    const hw_slot& slot = hw_[n];
    if (!slot.used) continue;
    if (skip_execute_at && slot.kind == hw_kind::execute && slot.address == *skip_execute_at) continue;
    const uint64_t rw = slot.kind == hw_kind::execute ? 0 : slot.kind == hw_kind::write ? 1 : 3;
    const uint64_t len = slot.length == 1 ? 0 : slot.length == 2 ? 1 : slot.length == 8 ? 2 : 3;
    dr7 |= 1ull << (2 * n);  // local enable
    dr7 |= rw << (16 + 4 * n) | len << (18 + 4 * n);
  }
  return dr7;
}

bool target::hardware_execute_at(uint64_t pc) const {
  for (const hw_slot& slot : hw_) {
    if (slot.used && slot.kind == hw_kind::execute && slot.address == pc) return true;
  }
  return false;
}

absl::Status target::apply_debug_registers() {
  const uint64_t dr7 = compute_dr7(std::nullopt);
  std::vector<std::pair<uint16_t, std::vector<uint8_t>>> done;
  absl::Status failure = absl::OkStatus();
  for (uint16_t cpu = 0; cpu < processor_count_; ++cpu) {
    auto special = read_control_space(cpu, kAmd64ControlSpaceKspecial, kKspecialReadSize);
    if (!special.ok()) {
      failure = special.status();
      break;
    }
    std::vector<uint8_t> changed = *special;
    for (int n = 0; n < 4; ++n) put_u64(changed, kKspecialDr0 + 8 * n, hw_[n].used ? hw_[n].address : 0);
    put_u64(changed, kKspecialDr7, dr7);
    if (auto s = write_control_space(cpu, kAmd64ControlSpaceKspecial, changed); !s.ok()) {
      failure = s;
      break;
    }
    done.emplace_back(cpu, std::move(*special));
  }
  if (failure.ok()) {
    hw_applied_ = true;
    return failure;
  }
  for (const auto& [cpu, old] : done) (void)write_control_space(cpu, kAmd64ControlSpaceKspecial, old);
  return failure;
}

absl::Status target::set_hardware_breakpoint(hw_kind kind, uint64_t address, uint32_t length) {
  if (auto s = require_halted("set a hardware breakpoint"); !s.ok()) return s;
  if (kind == hw_kind::execute) length = 1;
  if (length != 1 && length != 2 && length != 4 && length != 8) {
    return absl::InvalidArgumentError(absl::StrCat("A watchpoint covers 1, 2, 4 or 8 bytes, not ", length, "."));
  }
  if (address % length != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("A %u-byte watchpoint needs an address aligned to %u; 0x%x is not.", length, length, address));
  }
  int free_slot = -1;
  for (int n = 0; n < 4; ++n) {
    if (hw_[n].used && hw_[n].kind == kind && hw_[n].address == address && hw_[n].length == length)
      return absl::OkStatus();
    if (!hw_[n].used && free_slot < 0) free_slot = n;
  }
  if (free_slot < 0) {
    return absl::ResourceExhaustedError(
        "All four debug registers (DR0-DR3) are in use; clear a hardware breakpoint or watchpoint first.");
  }
  hw_[free_slot] = {true, kind, address, length};
  if (auto s = apply_debug_registers(); !s.ok()) {
    hw_[free_slot] = hw_slot{};
    return s;
  }
  return absl::OkStatus();
}

absl::Status target::clear_hardware_breakpoint(hw_kind kind, uint64_t address, uint32_t length) {
  if (auto s = require_halted("clear a hardware breakpoint"); !s.ok()) return s;
  if (kind == hw_kind::execute) length = 1;
  for (hw_slot& slot : hw_) {
    if (!slot.used || slot.kind != kind || slot.address != address || slot.length != length) continue;
    const hw_slot old = slot;
    slot = hw_slot{};
    if (auto s = apply_debug_registers(); !s.ok()) {
      slot = old;
      return s;
    }
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrFormat("There is no such hardware breakpoint or watchpoint at 0x%x.", address));
}

// ---- Run control ----------------------------------------------------------------------------

absl::Status target::continue_target(bool trace, std::optional<uint64_t> dr7) {
  // ContinueApi2: status, then the AMD64 control set packed to 4: TraceFlag, Dr7, symbol range.
  // The target loads this Dr7 on its processors, so it must carry our hardware breakpoints.
  std::vector<uint8_t> u(40, 0);
  put_u32(u, 0, kDbgContinue);
  put_u32(u, 4, trace ? 1 : 0);
  put_u64(u, 8, dr7.value_or(compute_dr7(std::nullopt)));
  put_u64(u, 16, 1);  // CurrentSymbolStart 1, End 0: no range stepping
  auto r = request({kApiContinue2, current_processor_, u, {}, false, false});
  return r.status();
}

void target::start_pump() {
  if (pump_.joinable()) pump_.join();
  {
    std::lock_guard lock(output_mutex_);
    bugcheck_text_.clear();
  }
  interrupt_requested_ = false;
  pump_stop_ = false;
  running_ = true;
  pump_ = std::thread([this] { pump(); });
}

absl::Status target::resume(bool step) {
  if (auto s = require_halted("resume"); !s.ok()) return s;
  {
    std::lock_guard lock(stop_mutex_);
    pending_stop_.reset();
  }
  const uint64_t pc = last_state_.pc;
  if (!hw_applied_) {
    if (auto s = apply_debug_registers(); !s.ok()) return s;
  }
  if (auto it = hardcoded_breaks_.find(current_processor_); it != hardcoded_breaks_.end() && it->second == pc) {
    // An int3 in the code was the instruction: step past it, as WinDbg does, or the target
    // traps on it again at once. (Under one of our breakpoints too: executing the original
    // int3 would only repeat the trap already reported.) A step ends right after it.
    if (step) {
      if (auto s = skip_hardcoded_breaks(current_processor_); !s.ok()) return s;
      stop_event e;
      e.why = stop_event::reason::step;
      e.processor = current_processor_;
      e.pc = last_state_.pc;
      e.description = "Single step";
      finish_stop(std::move(e));
      return absl::OkStatus();
    }
    if (auto s = skip_hardcoded_breaks(); !s.ok()) return s;
    if (auto s = rearm_breakpoints(std::nullopt); !s.ok()) return s;
    if (auto s = continue_target(false); !s.ok()) return s;
    start_pump();
    return absl::OkStatus();
  }
  // Other processors halted on an int3 of their own run on past it too.
  if (!step) {
    if (auto s = skip_hardcoded_breaks(); !s.ok()) return s;
  }
  if (step) {
    if (auto s = rearm_breakpoints(pc); !s.ok()) return s;
    if (auto s = continue_target(true, compute_dr7(pc)); !s.ok()) return s;
    stepping_ = true;
    start_pump();
    return absl::OkStatus();
  }
  stepping_ = false;
  if (breakpoints_.contains(pc) || hardware_execute_at(pc)) {
    // Step off our own breakpoint first (without it), then arm it again.
    if (auto s = rearm_breakpoints(pc); !s.ok()) return s;
    if (auto s = continue_target(true, compute_dr7(pc)); !s.ok()) return s;
    bool restarted = false;
    stepping_ = true;
    auto state = wait_state_change(options_.request_timeout, &restarted);
    stepping_ = false;
    if (!state.ok()) return state.status();
    if (restarted) forget_target_state();
    on_halt(*state);
    stop_event e = classify(*state, restarted);
    // A watchpoint the stepped instruction triggered is a stop of its own.
    const bool plain_step = !restarted && state->new_state == kStateException &&
                            state->exception_code == kStatusSingleStep && (state->dr6 & 0xF) == 0;
    if (!plain_step || breakpoints_.contains(state->pc) || hardware_execute_at(state->pc)) {
      if (plain_step) {
        e.why = stop_event::reason::breakpoint;
        e.description = absl::StrCat("Breakpoint at ", hex(state->pc));
        e.code = kStatusBreakpoint;
      }
      finish_stop(std::move(e));
      return absl::OkStatus();
    }
  }
  if (auto s = rearm_breakpoints(std::nullopt); !s.ok()) return s;
  if (auto s = continue_target(false); !s.ok()) return s;
  start_pump();
  return absl::OkStatus();
}

absl::Status target::skip_hardcoded_breaks(std::optional<uint16_t> only) {
  std::vector<std::pair<uint16_t, uint64_t>> todo;
  for (auto it = hardcoded_breaks_.begin(); it != hardcoded_breaks_.end();) {
    if (only && it->first != *only) {
      ++it;
      continue;
    }
    todo.emplace_back(*it);
    it = hardcoded_breaks_.erase(it);
  }
  for (const auto& [processor, at] : todo) {
    auto ctx = get_context(processor);
    if (!ctx.ok()) return ctx.status();
    if (get_u64(*ctx, kContextRip) != at) continue;  // moved since
    put_u64(*ctx, kContextRip, at + 1);              // int3 is one byte
    if (auto s = set_context(processor, *ctx); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status target::interrupt() {
  if (!running_) return absl::OkStatus();
  interrupt_requested_ = true;
  return link_->break_in();
}

void target::finish_stop(stop_event event) {
  std::lock_guard lock(stop_mutex_);
  pending_stop_ = std::move(event);
  running_ = false;
  stop_ready_.notify_all();
}

void target::pump() {
  while (!pump_stop_) {
    auto in = link_->receive(milliseconds(100));
    if (!in.ok()) {
      if (absl::IsDeadlineExceeded(in.status())) continue;
      lost_ = true;
      stop_event e;
      e.why = stop_event::reason::lost;
      e.description = std::string("The KD connection was lost: ") + std::string(in.status().message());
      finish_stop(std::move(e));
      return;
    }
    const packet& p = in->pkt;
    if (p.type == kTypeDebugIo) {
      on_debug_io(p.payload);
      continue;
    }
    if (p.type != kTypeStateChange64) continue;
    auto s = decode_state_change(p.payload);
    if (!s.ok()) continue;
    if (in->target_restarted) {
      forget_target_state();
      on_halt(*s);
      finish_stop(classify(*s, true));
      return;
    }
    if (s->new_state == kStateLoadSymbols && !stepping_) {
      // Module loads are noted and acknowledged by continuing, as WinDbg does by default.
      on_halt(*s);
      // The report deleted our table entries near its pc; write them back before going on.
      absl::Status c = rearm_breakpoints(s->pc);
      if (c.ok()) c = continue_target(false);
      if (!c.ok()) {
        lost_ = true;
        stop_event e;
        e.why = stop_event::reason::lost;
        e.description = std::string("Continuing after a module load failed: ") + std::string(c.message());
        finish_stop(std::move(e));
        return;
      }
      continue;
    }
    on_halt(*s);
    finish_stop(classify(*s, false));
    return;
  }
}

absl::StatusOr<std::optional<stop_event>> target::wait_stop(milliseconds timeout) {
  std::optional<stop_event> got;
  {
    std::unique_lock lock(stop_mutex_);
    stop_ready_.wait_for(lock, timeout, [this] { return pending_stop_.has_value(); });
    got.swap(pending_stop_);
  }
  if (!got) return got;
  if (pump_.joinable()) pump_.join();
  if (got->why == stop_event::reason::bugcheck) last_bugcheck_ = *got;
  if (got->why == stop_event::reason::reboot) last_bugcheck_.reset();
  stepping_ = false;
  interrupt_requested_ = false;
  if (got->why == stop_event::reason::reboot && !lost_) {
    // Best effort: the rebooted kernel may sit elsewhere.
    (void)get_version();
  }
  return got;
}

absl::Status target::detach() {
  if (detached_) return absl::OkStatus();
  detached_ = true;
  absl::Status result = absl::OkStatus();
  if (running_ && !lost_) {
    (void)interrupt();
    auto s = wait_stop(milliseconds(3000));
    if (!s.ok() || !s->has_value()) result = absl::DeadlineExceededError("The target did not stop for the detach.");
  }
  if (running_) {
    pump_stop_ = true;
    link_->shutdown();
  }
  if (pump_.joinable()) pump_.join();
  if (!running_ && !lost_) {
    for (auto& [address, bp] : breakpoints_) {
      if (!bp.handle) continue;
      auto r = request({kApiRestoreBreakPoint, current_processor_, union_of({{0, *bp.handle}})});
      if (!r.ok() && result.ok()) result = r.status();
      bp.handle.reset();
    }
    breakpoints_.clear();
    bool had_hardware = false;
    for (hw_slot& slot : hw_) {
      had_hardware = had_hardware || slot.used;
      slot = hw_slot{};
    }
    if (had_hardware) {
      if (auto s = apply_debug_registers(); !s.ok() && result.ok()) result = s;
    }
    // Let the target run: a halted kernel with nobody attached hangs on its next DbgPrint, and
    // one left on an int3 traps on it again at once.
    if (auto s = skip_hardcoded_breaks(); !s.ok() && result.ok()) result = s;
    if (auto s = continue_target(false); !s.ok() && result.ok()) result = s;
  }
  link_->shutdown();
  return result;
}

}  // namespace toolhost::kd
