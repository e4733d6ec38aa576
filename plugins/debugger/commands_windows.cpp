// Windows kernel commands: !process, .process, !thread, .thread, !peb, !pte, !vtop, !lmi, !dh,
// in WinDbg's layouts.
#include <algorithm>
#include <cstring>

#include <absl/strings/ascii.h>
#include <absl/strings/str_format.h>
#include <toolhost/paging/page_walk.hpp>
#include <toolhost/sdk/json.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "pe_symbols.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

const char* const kThreadStates[] = {
    "Initialized", "Ready",      "Running",       "Standby",          "Terminated",
    "Waiting",     "Transition", "DeferredReady", "GateWaitObsolete", "WaitingForProcessInSwap"};
const char* const kWaitReasons[] = {"Executive",        "FreePage",          "PageIn",
                                    "PoolAllocation",   "DelayExecution",    "Suspended",
                                    "UserRequest",      "WrExecutive",       "WrFreePage",
                                    "WrPageIn",         "WrPoolAllocation",  "WrDelayExecution",
                                    "WrSuspended",      "WrUserRequest",     "WrSpare0",
                                    "WrQueue",          "WrLpcReceive",      "WrLpcReply",
                                    "WrVirtualMemory",  "WrPageOut",         "WrRendezvous",
                                    "WrKeyedEvent",     "WrTerminated",      "WrProcessInSwap",
                                    "WrCpuRateControl", "WrCalloutStack",    "WrKernel",
                                    "WrResource",       "WrPushLock",        "WrMutex",
                                    "WrQuantumEnd",     "WrDispatchInt",     "WrPreempted",
                                    "WrYieldExecution", "WrFastMutex",       "WrGuardedMutex",
                                    "WrRundown",        "WrAlertByThreadId", "WrDeferredPreempt",
                                    "WrPhysicalFault",  "WrIoRing",          "WrMdlCache"};

std::string state_text(const windows::thread& t) {
  if (t.state == 5) {
    const char* reason = t.wait_reason < std::size(kWaitReasons) ? kWaitReasons[t.wait_reason] : "Unknown";
    return absl::StrFormat("WAIT: (%s) %s Non-Alertable", reason, t.wait_mode != 0 ? "UserMode" : "KernelMode");
  }
  if (t.state == 2) return "RUNNING";
  return t.state < std::size(kThreadStates) ? absl::AsciiStrToUpper(kThreadStates[t.state]) : "UNKNOWN";
}

// KTHREAD times are in clock ticks of 15.625 ms.
std::string tick_time(uint64_t ticks) {
  const uint64_t ms = ticks * 15625 / 1000;
  return absl::StrFormat("%02u:%02u:%02u.%03u", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, ms % 1000);
}

// 100 ns units.
std::string duration_text(uint64_t units) {
  const uint64_t ms = units / 10000;
  return absl::StrFormat("%02u:%02u:%02u.%03u", ms / 3600000, ms / 60000 % 60, ms / 1000 % 60, ms % 1000);
}

std::string process_json(const windows::process& p, std::optional<uint32_t> handles) {
  return absl::StrFormat(
      R"({"eprocess":"0x%x","pid":%d,"parent_pid":%d,"session_id":%s,"peb":"0x%x","dirbase":"0x%x","object_table":"0x%x","handle_count":%s,"image":%s)",
      p.eprocess, p.pid, p.parent_pid, p.session_id ? std::to_string(*p.session_id) : "null", p.peb, p.dtb,
      p.object_table, handles ? std::to_string(*handles) : "null", sdk::quote(p.image));
}

std::string thread_json(const windows::thread& t) {
  return absl::StrFormat(
      R"({"ethread":"0x%x","pid":%d,"tid":%d,"teb":"0x%x","win32thread":"0x%x","state":%s,"wait_reason":%s,"owning_process":"0x%x","stack_base":"0x%x","stack_limit":"0x%x","kernel_stack":"0x%x","priority":%d,"base_priority":%d})",
      t.ethread, t.pid, t.tid, t.teb, t.win32thread,
      sdk::quote(t.state < std::size(kThreadStates) ? kThreadStates[t.state] : "Unknown"),
      sdk::quote(t.wait_reason < std::size(kWaitReasons) ? kWaitReasons[t.wait_reason] : "Unknown"), t.process,
      t.stack_base, t.stack_limit, t.kernel_stack, t.priority, t.base_priority);
}

}  // namespace

absl::Status session::cmd_process(const std::string& name, std::string_view args) {
  if (auto s = need_windows(name); !s.ok()) return s;
  // !process [Process [Flags [ImageName]]]
  std::vector<std::string> words;
  size_t pos = 0;
  for (std::string w; !(w = take_word(args, pos)).empty();) words.push_back(w);
  uint64_t flags = 3;
  std::string image;
  std::optional<windows::process> only;
  bool all = false;
  if (words.empty()) {
    only = scope_ ? scope_ : current_process();
    if (!only) return absl::NotFoundError("the current process is not known; name one: !process <pid|eprocess>");
  } else {
    auto selector = eval(words[0]);
    if (!selector.ok()) return usage_error(name, std::string(selector.status().message()));
    if (*selector == 0) {
      all = true;
    } else if (*selector == UINT64_MAX) {
      only = scope_ ? scope_ : current_process();
      if (!only) return absl::NotFoundError("the current process is not known");
    } else {
      auto p = find_process(words[0]);
      if (!p.ok()) return p.status();
      only = *p;
    }
    if (words.size() > 1) {
      auto f = eval(words[1]);
      if (!f.ok()) return usage_error(name, "the flags are a number: " + std::string(f.status().message()));
      flags = *f;
    }
    if (words.size() > 2) image = words[2];
  }
  std::vector<windows::process> list;
  if (all) {
    auto walked = windows_->processes();
    if (!walked.ok()) return walked.status();
    for (auto& p : *walked) {
      if (image.empty() || absl::AsciiStrToLower(p.image) == absl::AsciiStrToLower(image)) list.push_back(std::move(p));
    }
    out_ += "**** NT ACTIVE PROCESS DUMP ****\n";
  } else {
    list.push_back(*only);
  }
  std::string json = R"({"processes":[)";
  for (size_t i = 0; i < list.size(); ++i) {
    const windows::process& p = list[i];
    const auto handles = windows_->handle_count(p);
    out_ += absl::StrFormat("PROCESS %016x\n", p.eprocess);
    out_ += absl::StrFormat("    SessionId: %s  Cid: %04x    Peb: %08x  ParentCid: %04x\n",
                            p.session_id ? std::to_string(*p.session_id) : "none", p.pid, p.peb, p.parent_pid);
    out_ += absl::StrFormat("    DirBase: %08x  ObjectTable: %016x  HandleCount: %s\n", p.dtb, p.object_table,
                            handles ? std::to_string(*handles) + "." : "<Data Not Accessible>");
    out_ += "    Image: " + p.image + "\n";
    json += std::string(i ? "," : "") + process_json(p, handles);
    std::vector<windows::thread> threads;
    if (flags & 0x6) threads = windows_->threads(p);
    if (flags & 0x1) {
      out_ += absl::StrFormat("    VadRoot %016x\n", p.vad_root);
      out_ += absl::StrFormat("    Token                             %016x\n", p.token);
      std::vector<uint8_t> now(8);
      if (windows_->read(0, windows::kKuserSharedData + windows::kKuserSystemTime, now) == 8 && p.create_time > 0) {
        uint64_t system_time;
        std::memcpy(&system_time, now.data(), 8);
        if (system_time >= static_cast<uint64_t>(p.create_time)) {
          out_ += "    ElapsedTime                       " + duration_text(system_time - p.create_time) + "\n";
        }
      }
      uint64_t user = 0, kernel_time = 0;
      for (const auto& t : windows_->threads(p)) {
        user += t.user_time;
        kernel_time += t.kernel_time;
      }
      out_ += "    UserTime                          " + tick_time(user) + "\n";
      out_ += "    KernelTime                        " + tick_time(kernel_time) + "\n";
    }
    if (!threads.empty()) {
      json += R"(,"threads":[)";
      for (size_t j = 0; j < threads.size(); ++j) {
        const auto& t = threads[j];
        out_ += absl::StrFormat("\n        THREAD %016x  Cid %04x.%04x  Teb: %016x Win32Thread: %016x %s\n", t.ethread,
                                t.pid, t.tid, t.teb, t.win32thread, state_text(t));
        json += std::string(j ? "," : "") + thread_json(t);
      }
      json += "]";
    }
    json += "}";
    out_ += "\n";
  }
  if (all && list.empty())
    out_ += image.empty() ? "No process is listed.\n" : "No process has the image " + image + ".\n";
  result_json_ = json + "]}";
  return absl::OkStatus();
}

absl::Status session::cmd_dot_process(const std::string& name, std::string_view args) {
  if (auto s = need_windows(name); !s.ok()) return s;
  bool reload = false;
  std::string which;
  size_t pos = 0;
  for (std::string w; !(w = take_word(args, pos)).empty();) {
    if (w == "/p" || w == "/i") continue;  // the scope is always a full one: memory reads use its tables
    if (w == "/r") {
      reload = true;
    } else if (w[0] == '/') {
      return usage_error(name, "unknown option " + w);
    } else if (which.empty()) {
      which = w;
    } else {
      return usage_error(name, "one process at a time");
    }
  }
  std::optional<windows::process> chosen;
  if (!which.empty()) {
    auto value = eval(which);
    if (value.ok() && *value == 0) {
      scope_.reset();  // .process 0: back to the process the vCPU runs
    } else {
      auto p = find_process(which);
      if (!p.ok()) return p.status();
      scope_ = *p;
    }
    install_translation();
    registers_.reset();
    modules_stale_ = true;
    if (reload || scope_) {
      refresh_modules(false);
      // /r: the user modules' symbols are looked for again.
      if (reload) symbols_.unload("*");
    }
  }
  chosen = scope_ ? scope_ : current_process();
  if (!chosen) {
    out_ += "The implicit process is the one the vCPU runs, which is not known here.\n";
    result_json_ = "null";
    return absl::OkStatus();
  }
  out_ += "Implicit process is now " + address_text(chosen->eprocess) + " (" + chosen->image + ", Cid " +
          absl::StrFormat("%04x", chosen->pid) + ")" + (scope_ ? "" : ", the one the vCPU runs") + "\n";
  result_json_ = process_json(*chosen, std::nullopt) + absl::StrFormat(R"(,"scope":%s})", scope_ ? "true" : "false");
  return absl::OkStatus();
}

absl::Status session::cmd_thread(const std::string& name, std::string_view args) {
  if (auto s = need_windows(name); !s.ok()) return s;
  uint64_t ethread = implicit_thread_ != 0 ? implicit_thread_ : current_ethread();
  size_t pos = 0;
  const std::string word = take_word(args, pos);
  if (!word.empty()) {
    auto v = eval(word);
    if (!v.ok()) return usage_error(name, std::string(v.status().message()));
    ethread = *v;
  }
  if (ethread == 0) return absl::NotFoundError("the current thread is not known; name one: !thread <ethread>");
  auto t = windows_->thread_at(ethread);
  if (!t.ok()) return t.status();
  std::string owner_image = "?";
  if (auto p = windows_->process_at(t->process); p.ok()) owner_image = p->image;
  std::string state = state_text(*t);
  if (t->state == 2) {
    // Which processor: the one whose PRCB says it runs this thread.
    for (uint32_t i = 0, n = windows_processors(); i < n; ++i) {
      if (windows_->current_thread(i) == ethread) state = absl::StrFormat("RUNNING on processor %u", i);
    }
  }
  out_ += absl::StrFormat("THREAD %016x  Cid %04x.%04x  Teb: %016x Win32Thread: %016x %s\n", t->ethread, t->pid, t->tid,
                          t->teb, t->win32thread, state);
  out_ += absl::StrFormat("    Owning Process            %016x       Image:         %s\n", t->process, owner_image);
  out_ += "    Attached Process          N/A            Image:         N/A\n";
  out_ += "    UserTime                  " + tick_time(t->user_time) + "\n";
  out_ += "    KernelTime                " + tick_time(t->kernel_time) + "\n";
  const std::string start = symbol_of(t->win32_start);
  out_ += absl::StrFormat("    Win32 Start Address %s (0x%016x)\n",
                          start.empty() ? "0x" + hex16(t->win32_start) : start, t->win32_start);
  out_ += absl::StrFormat("    Stack Init %016x Current %016x\n", t->initial_stack, t->kernel_stack);
  out_ += absl::StrFormat("    Base %016x Limit %016x Call 0000000000000000\n", t->stack_base, t->stack_limit);
  out_ += absl::StrFormat("    Priority %d  BasePriority %d\n", t->priority, t->base_priority);
  result_json_ = thread_json(*t);
  result_json_.insert(result_json_.size() - 1, R"(,"image":)" + sdk::quote(owner_image));
  return absl::OkStatus();
}

void session::list_processors() {
  // Processor n is the backend's vCPU n; a dump holds one register context, so the kernel may
  // know more processors than the backend lists.
  std::string json = R"({"threads":[)";
  for (uint32_t i = 0, n = windows_processors(); i < n; ++i) {
    const bool vcpu = i < threads_.size();
    const bool current = vcpu && threads_[i].current;
    std::string line = absl::StrFormat("%s%u  Processor %u", current ? "." : " ", i, i);
    std::string entry = absl::StrFormat(R"({"index":%u,"processor":%u,"id":%s,"name":%s,"current":%s)", i, i,
                                        vcpu ? std::to_string(threads_[i].id) : "null",
                                        sdk::quote(vcpu ? threads_[i].name : ""), current ? "true" : "false");
    const uint64_t ethread = windows_->current_thread(i);
    auto t = ethread != 0 ? windows_->thread_at(ethread) : absl::NotFoundError("no PRCB");
    if (t.ok()) {
      std::string image = "?";
      if (auto p = windows_->process_at(t->process); p.ok()) image = p->image;
      line += absl::StrFormat("  Thread %s  Cid %04x.%04x  Process %s  %s", address_text(t->ethread), t->pid, t->tid,
                              address_text(t->process), image);
      entry += absl::StrFormat(R"(,"ethread":"0x%x","tid":%d,"pid":%d,"eprocess":"0x%x","image":%s)", t->ethread,
                               t->tid, t->pid, t->process, sdk::quote(image));
    } else {
      line += "  Thread ? (its PRCB or CurrentThread is not readable)";
      entry += R"(,"ethread":null)";
    }
    if (!vcpu) line += "  (no register context from the " + target_->backend() + " backend)";
    out_ += line + "\n";
    json += std::string(i ? "," : "") + entry + "}";
  }
  result_json_ = json + "]}";
}

absl::Status session::cmd_dot_thread(const std::string& name, std::string_view args) {
  if (auto s = need_windows(name); !s.ok()) return s;
  size_t pos = 0;
  const std::string word = take_word(args, pos);
  if (!word.empty()) {
    auto v = eval(word);
    if (!v.ok()) return usage_error(name, std::string(v.status().message()));
    if (*v != 0) {
      auto t = windows_->thread_at(*v);
      if (!t.ok()) return t.status();
    }
    implicit_thread_ = *v;
  }
  const uint64_t thread = implicit_thread_ != 0 ? implicit_thread_ : current_ethread();
  if (thread == 0) {
    out_ += "The implicit thread is the one the vCPU runs, which is not known here.\n";
    return absl::OkStatus();
  }
  out_ += "Implicit thread is now " + address_text(thread) + (implicit_thread_ != 0 ? "" : ", the one the vCPU runs") +
          "\n";
  result_json_ = absl::StrFormat(R"({"ethread":"0x%x"})", thread);
  return absl::OkStatus();
}

absl::Status session::cmd_peb(const std::string& name, std::string_view args) {
  if (auto s = need_windows(name); !s.ok()) return s;
  std::optional<windows::process> p = scope_ ? scope_ : current_process();
  if (!p) return absl::NotFoundError("no process is in scope (.process /p <pid>) and the current one is not known");
  uint64_t peb = p->peb;
  size_t pos = 0;
  if (const std::string word = take_word(args, pos); !word.empty()) {
    auto v = eval(word);
    if (!v.ok()) return usage_error(name, std::string(v.status().message()));
    peb = *v;
  }
  if (peb == 0) return absl::NotFoundError(p->image + " has no PEB (a kernel-only process)");
  const auto& l = windows_->layout();
  auto image_base = windows_->read_u64(peb + l.peb_image_base, p->dtb);
  auto ldr = windows_->read_u64(peb + l.peb_ldr, p->dtb);
  if (!image_base || !ldr)
    return absl::NotFoundError(absl::StrFormat("the PEB at %016x is not readable in %s (paged out?)", peb, p->image));
  out_ += absl::StrFormat("PEB at %016x\n", peb);
  out_ += absl::StrFormat("    ImageBaseAddress:         %016x\n", *image_base);
  out_ += absl::StrFormat("    Ldr                       %016x\n", *ldr);
  const uint64_t head = *ldr + l.ldr_in_load_order;
  auto flink = windows_->read_u64(head, p->dtb);
  auto blink = windows_->read_u64(head + 8, p->dtb);
  out_ +=
      absl::StrFormat("    Ldr.InLoadOrderModuleList:           %016x . %016x\n", flink.value_or(0), blink.value_or(0));
  out_ += "            Base TimeStamp                     Module\n";
  std::string modules = "[";
  auto list = windows_->user_modules(*p);
  if (list.ok()) {
    for (const auto& m : *list) {
      out_ += absl::StrFormat("    %12x %08x %s\n", m.base, m.timestamp, m.path);
      modules += std::string(modules.size() > 1 ? "," : "") +
                 absl::StrFormat(R"({"base":"0x%x","size":"0x%x","name":%s,"path":%s})", m.base, m.size,
                                 sdk::quote(m.name), sdk::quote(m.path));
    }
  }
  result_json_ = absl::StrFormat(R"({"peb":"0x%x","image_base":"0x%x","ldr":"0x%x","modules":%s]})", peb, *image_base,
                                 *ldr, modules);
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
