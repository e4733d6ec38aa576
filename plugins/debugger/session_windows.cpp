// The session's side of Windows kernel targets: discovery, the kernel module list, the current
// process and scope in the trailer and the JSON target, and virtual reads through the page
// tables of the process in scope.
#include <algorithm>
#include <cstring>

#include <absl/strings/str_format.h>
#include <toolhost/paging/page_walk.hpp>
#include <toolhost/sdk/json.hpp>

#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

uint64_t hint_number(const target& t, std::string_view name) {
  const std::string v = t.hint(name);
  return v.empty() ? 0 : std::strtoull(v.c_str(), nullptr, 0);
}

}  // namespace

absl::Status session::need_windows(const std::string& name) const {
  if (windows_) return absl::OkStatus();
  if (windows_pending_)
    return absl::FailedPreconditionError("the target rebooted and its kernel is not found again yet; '" + name +
                                         "' waits for the next stop");
  return absl::FailedPreconditionError(
      "'" + name + "' needs a Windows kernel target" +
      (windows_problem_.empty() ? std::string(" (this one is not)") : ": " + windows_problem_));
}

void session::discover_windows() {
  windows_.reset();
  scope_.reset();
  target_->set_translation({});
  // A process (gdbserver, a process core) has no kernel to find.
  if (target_->kind() != "system") return;
  windows::hints h;
  h.dtb = hint_number(*target_, "dtb");
  h.kernel_base = hint_number(*target_, "kernel_base");
  h.module_list = hint_number(*target_, "module_list_head");
  h.active_process_head = hint_number(*target_, "ps_active_process_head");
  h.kdbg = hint_number(*target_, "kd_debugger_data_block");
  h.kdbg_list = hint_number(*target_, "debugger_data_list");
  h.source = target_->backend() == "dump" ? "the dump header" : target_->backend() + "'s hints";
  h.cr3 = current_cr3();
  windows::memory_access memory;
  target* t = target_.get();
  if (t->has(TOOLHOST_DT_CAP_READ_PHYSICAL)) {
    memory.physical = [t](uint64_t address, std::span<uint8_t> out) -> size_t {
      auto bytes = t->read(address, out.size(), TOOLHOST_DT_PHYSICAL);
      if (!bytes.ok()) return 0;
      std::memcpy(out.data(), bytes->data(), bytes->size());
      return bytes->size();
    };
  }
  if (t->has(TOOLHOST_DT_CAP_READ_VIRTUAL)) {
    memory.current_virtual = [t](uint64_t address, std::span<uint8_t> out) -> size_t {
      auto bytes = t->read(address, out.size(), TOOLHOST_DT_VIRTUAL);
      if (!bytes.ok()) return 0;
      std::memcpy(out.data(), bytes->data(), bytes->size());
      return bytes->size();
    };
  }
  auto found = windows::kernel::discover(memory, h);
  if (!found.ok()) {
    windows_problem_ = std::string(found.status().message());
    // A target that was never Windows has nothing to rediscover.
    if (!had_windows_) windows_pending_ = false;
    return;
  }
  had_windows_ = true;
  windows_ = std::move(*found);
  windows_pending_ = false;
  windows_problem_.clear();
  install_translation();
  // nt's symbols: the kernel image as module "nt", its PDB from the symbol path.
  std::vector<module_info> list;
  if (target_->has(TOOLHOST_DT_CAP_MODULES)) list = target_->modules();
  if (list.empty()) list.push_back({"ntoskrnl.exe", "", windows_->kernel_base(), windows_->kernel_size()});
  symbols_.set_modules(list);
  modules_stale_ = false;
  windows::kernel::nt_symbols nt;
  if (const module* m = symbols_.module_at(windows_->kernel_base())) {
    symbols_.ensure_loaded(*m);
    for (const auto& source : m->symbols.sources) {
      if (source->types() != nullptr) {
        nt.types = source->types();
        break;
      }
    }
    const uint64_t base = m->base;
    const module* nt_module = m;
    nt.address = [nt_module, base](std::string_view name) -> std::optional<uint64_t> {
      for (const auto& source : nt_module->symbols.sources) {
        if (auto hit = source->find(name)) return base + hit->offset;
      }
      return std::nullopt;
    };
  }
  windows_->attach_symbols(nt);
  modules_stale_ = true;
  refresh_modules();
}

std::optional<std::vector<module_info>> session::windows_modules() {
  if (!windows_) return std::nullopt;
  std::vector<module_info> list;
  if (target_->has(TOOLHOST_DT_CAP_MODULES)) list = target_->modules();
  if (list.empty()) {
    auto kernel = windows_->kernel_modules();
    if (kernel.ok()) {
      for (const auto& m : *kernel) list.push_back({m.name, m.path, m.base, m.size});
    }
    if (list.empty()) list.push_back({"ntoskrnl.exe", "", windows_->kernel_base(), windows_->kernel_size()});
  }
  // The user modules of the process in scope, as WinDbg lists them after .process /r.
  if (scope_) {
    auto user = windows_->user_modules(*scope_);
    if (user.ok()) {
      for (const auto& m : *user) list.push_back({m.name, m.path, m.base, m.size});
    }
  }
  return list;
}

uint64_t session::current_cr3() {
  const auto* reg = target_->register_with_role("cr3");
  if (reg == nullptr) reg = target_->find_register("cr3");
  if (reg == nullptr || running()) return 0;
  return register_value(reg->name).value_or(0);
}

void session::install_translation() {
  if (!windows_ || !target_->has(TOOLHOST_DT_CAP_READ_PHYSICAL)) {
    target_->set_translation({});
    return;
  }
  // Our own page walk when a scope is set, when the backend would read the kernel through
  // whatever CR3 the vCPU happens to have (a VM's RAM, QEMU's gdbstub), or when the backend did
  // not know the kernel's tables (a dump whose header names none); a dump's and KD's own virtual
  // reads otherwise already use them.
  const bool vm = target_->backend() == "memory" || target_->backend() == "gdb";
  const bool found_by_us = hint_number(*target_, "dtb") == 0;
  if (!scope_ && !vm && !found_by_us) {
    target_->set_translation({});
    return;
  }
  target* t = target_.get();
  const uint64_t kernel_dtb = windows_->dtb();
  const uint64_t scope_dtb = scope_ ? scope_->dtb : 0;
  auto phys = [t](uint64_t address, std::span<uint8_t> out) -> absl::Status {
    auto bytes = t->read(address, out.size(), TOOLHOST_DT_PHYSICAL);
    if (!bytes.ok()) return bytes.status();
    if (bytes->size() != out.size()) return absl::NotFoundError("physical memory is not readable there");
    std::memcpy(out.data(), bytes->data(), out.size());
    return absl::OkStatus();
  };
  target_->set_translation([this, kernel_dtb, scope_dtb, phys](uint64_t va) -> absl::StatusOr<uint64_t> {
    uint64_t dtb = scope_dtb;
    if (dtb == 0) {
      // No scope: kernel addresses through the kernel's tables, user ones through the vCPU's.
      const uint64_t cr3 = paging::cr3_table(current_cr3());
      dtb = (va >> 63) != 0 || cr3 == 0 ? kernel_dtb : cr3;
    }
    auto tr = paging::translate(dtb, va, phys);
    if (!tr.ok()) return tr.status();
    return tr->physical;
  });
}

std::optional<windows::process> session::current_process() {
  if (!windows_ || running()) return std::nullopt;
  if (const uint64_t ethread = current_ethread()) {
    if (auto process = windows_->read_u64(ethread + windows_->layout().kthread_apc_process); process && *process) {
      if (auto p = windows_->process_at(*process); p.ok()) return *p;
    }
  }
  // Else the process whose directory table the vCPU has loaded.
  const uint64_t cr3 = paging::cr3_table(current_cr3());
  if (cr3 == 0) return std::nullopt;
  auto list = windows_->processes();
  if (!list.ok()) return std::nullopt;
  for (const auto& p : *list) {
    if (p.dtb == cr3 || (p.user_dtb != 0 && p.user_dtb == cr3)) return p;
  }
  return std::nullopt;
}

uint64_t session::current_ethread() {
  if (!windows_) return 0;
  if (threads_.empty()) refresh_threads();
  uint32_t processor = 0;
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (threads_[i].current) processor = static_cast<uint32_t>(i);
  }
  return windows_->current_thread(processor);
}

uint32_t session::windows_processors() {
  if (threads_.empty()) refresh_threads();
  const uint32_t vcpus = static_cast<uint32_t>(std::max<size_t>(threads_.size(), 1));
  if (!windows_) return vcpus;
  return std::max(windows_->processor_count().value_or(vcpus), vcpus);
}

std::string session::windows_trailer() {
  std::string text;
  if (windows_pending_) text += " | rediscovery pending";
  if (!windows_) return text;
  if (auto p = current_process()) text += absl::StrFormat(" | process %s (%d)", p->image, p->pid);
  return text + scope_trailer();
}

std::string session::scope_trailer() const {
  return scope_ ? absl::StrFormat(" | scope %s (%d)", scope_->image, scope_->pid) : std::string();
}

std::string session::windows_target_json() {
  auto process_json = [](const windows::process& p) {
    return absl::StrFormat(R"({"name":%s,"pid":%d,"eprocess":"0x%x","dirbase":"0x%x"})", sdk::quote(p.image), p.pid,
                           p.eprocess, p.dtb);
  };
  std::string j = R"(,"attached_process":)" + (scope_ ? process_json(*scope_) : std::string("null"));
  std::optional<windows::process> current = running() ? std::nullopt : current_process();
  j += R"(,"stopped_process":)" + (current ? process_json(*current) : std::string("null"));
  std::string thread = "null";
  if (!running()) {
    if (const uint64_t e = current_ethread()) {
      if (auto t = windows_->thread_at(e); t.ok()) {
        thread = absl::StrFormat(R"({"ethread":"0x%x","tid":%d,"pid":%d})", t->ethread, t->tid, t->pid);
      }
    }
  }
  j += R"(,"stopped_thread":)" + thread;
  j += R"(,"coherent":)" + std::string(!windows_pending_ && !exited_ ? "true" : "false");
  j += absl::StrFormat(R"(,"kernel_base":"0x%x")", windows_->kernel_base());
  return j;
}

std::string session::windows_version_text(std::string& json) {
  const windows::kernel& k = *windows_;
  const uint32_t processors = windows_processors();
  std::string out =
      absl::StrFormat("Windows %u Kernel Version %u %s (%u procs) Free x64\n", k.major() != 0 ? k.major() : 10,
                      k.build(), processors > 1 ? "MP" : "UP", processors);
  out += absl::StrFormat("Kernel base = 0x%s PsLoadedModuleList = 0x%s\n", address_text(k.kernel_base()),
                         address_text(k.module_list()));
  out += "Found through " + k.how() + "; layout from the " + k.layout().note + "\n";
  if (k.kdbg() != 0) {
    out += "KDBG at " + address_text(k.kdbg()) +
           (k.kdbg_was_encoded() ? " (encoded; decoded with KiWaitNever, KiWaitAlways and KdpDataBlockEncoded)" : "") +
           "\n";
  }
  for (const auto& note : k.notes()) out += "Note: " + note + "\n";
  json = absl::StrFormat(
      R"({"os":"windows","build":%u,"major":%u,"minor":%u,"processors":%u,"kernel_base":"0x%x","ps_loaded_module_list":"0x%x","dirbase":"0x%x","kdbg":%s,"kdbg_encoded":%s,"found_by":%s,"layout":%s})",
      k.build(), k.major(), k.minor(), processors, k.kernel_base(), k.module_list(), k.dtb(),
      k.kdbg() != 0 ? sdk::quote(hex(k.kdbg())) : "null", k.kdbg_was_encoded() ? "true" : "false", sdk::quote(k.how()),
      sdk::quote(k.layout().note));
  return out;
}

absl::StatusOr<windows::process> session::find_process(std::string_view text) {
  if (auto s = need_windows(".process"); !s.ok()) return s;
  auto list = windows_->processes();
  if (!list.ok()) return list.status();
  std::string word(text);
  // A decimal PID first (as ntoseye), then an EPROCESS address, then the value as a PID.
  const bool decimal = !word.empty() && word.find_first_not_of("0123456789") == std::string::npos;
  if (decimal) {
    const uint64_t pid = std::stoull(word);
    for (const auto& p : *list) {
      if (p.pid == pid) return p;
    }
  }
  auto value = eval(word);
  if (!value.ok()) return value.status();
  for (const auto& p : *list) {
    if (p.eprocess == *value) return p;
  }
  for (const auto& p : *list) {
    if (p.pid == *value) return p;
  }
  return absl::NotFoundError("no process has the PID or EPROCESS " + word + " (!process 0 0 lists them)");
}

}  // namespace toolhost::debugger
