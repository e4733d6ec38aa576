#include "session.hpp"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <utility>

#include <toolhost/sdk/json.hpp>
#include <toolhost/signals/posix_signals.hpp>

#include "command_line.hpp"
#include "dwarf_symbols.hpp"
#include "elf_symbols.hpp"
#include "format.hpp"
#include "mnemonics.hpp"
#include "output_store.hpp"
#include "pdb_symbols.hpp"
#include "pe_symbols.hpp"
#include "pe_unwinder.hpp"

namespace toolhost::debugger {

namespace signals = toolhost::signals;

namespace {
constexpr auto kSlice = std::chrono::milliseconds(50);
}

session::session(std::unique_ptr<target> t) : target_(std::move(t)) {
  symbols_.set_loader([this](const module& m) { return load_module_symbols(m); });
}

session::~session() {
  // Temporary breakpoints are ours alone; user breakpoints go with the backend's close().
  if (target_ && !target_->is_running()) clear_temporaries();
}

bool session::running() { return !exited_ && target_->is_running(); }

// ---- Expression context ------------------------------------------------------------------

std::optional<uint64_t> session::register_value(std::string_view name) {
  std::string n(name);
  if (n == "$ip") {
    const auto* r = target_->register_with_role("pc");
    if (r == nullptr) return std::nullopt;
    n = r->name;
  } else if (n == "$csp") {
    const auto* r = target_->register_with_role("sp");
    if (r == nullptr) return std::nullopt;
    n = r->name;
  }
  if (target_->find_register(n) == nullptr) return std::nullopt;
  if (selected_frame_ != 0) {
    // .frame N: the selected frame's registers (unknown ones have no value).
    if (auto framed = selected_frame_registers()) {
      auto it = framed->find(n);
      if (it == framed->end()) return std::nullopt;
      return it->second;
    }
  }
  auto r = regs();
  if (!r.ok()) return std::nullopt;
  auto it = (*r)->find(n);
  if (it == (*r)->end()) return std::nullopt;
  return it->second;
}

absl::StatusOr<uint64_t> session::symbol_address(std::string_view name) {
  refresh_modules();
  return symbols_.resolve(name);
}

absl::StatusOr<uint64_t> session::read_memory(uint64_t address, int size) {
  auto bytes = target_->read(address, static_cast<size_t>(size));
  if (!bytes.ok()) return bytes.status();
  if (bytes->size() < static_cast<size_t>(size)) {
    return absl::NotFoundError("memory at " + address_text(address + bytes->size()) + " is not readable");
  }
  uint64_t v = 0;
  std::memcpy(&v, bytes->data(), static_cast<size_t>(size));
  return v;
}

absl::StatusOr<uint64_t> session::eval(std::string_view text) {
  auto v = evaluate(trim(text), *this);
  if (!v.ok())
    return absl::InvalidArgumentError("bad expression '" + std::string(trim(text)) +
                                      "': " + std::string(v.status().message()));
  return v;
}

absl::StatusOr<uint64_t> session::eval_prefix(std::string_view text, size_t& pos) {
  auto v = evaluate_prefix(text, pos, *this);
  if (!v.ok())
    return absl::InvalidArgumentError("bad expression '" + std::string(trim(text)) +
                                      "': " + std::string(v.status().message()));
  return v;
}

// ---- State -------------------------------------------------------------------------------

absl::StatusOr<const register_values*> session::regs() {
  if (registers_) return &*registers_;
  if (exited_) return absl::FailedPreconditionError("the process has exited; there are no registers");
  if (!target_->has(TOOLHOST_DT_CAP_REGISTERS)) {
    return absl::UnimplementedError("the " + target_->backend() + " backend has no registers to show");
  }
  if (running()) return absl::FailedPreconditionError("the target is running; registers are read while it is halted");
  auto r = target_->read_registers();
  if (!r.ok()) return r.status();
  registers_ = std::move(*r);
  return &*registers_;
}

absl::StatusOr<uint64_t> session::pc() {
  const auto* reg = target_->register_with_role("pc");
  if (reg == nullptr) return absl::UnimplementedError("the target's register map has no program counter");
  auto r = regs();
  if (!r.ok()) return r.status();
  auto it = (*r)->find(reg->name);
  if (it == (*r)->end()) return absl::UnimplementedError("the program counter is not readable");
  return it->second;
}

absl::StatusOr<uint64_t> session::sp() {
  const auto* reg = target_->register_with_role("sp");
  if (reg == nullptr) return absl::UnimplementedError("the target's register map has no stack pointer");
  auto r = regs();
  if (!r.ok()) return r.status();
  auto it = (*r)->find(reg->name);
  if (it == (*r)->end()) return absl::UnimplementedError("the stack pointer is not readable");
  return it->second;
}

void session::refresh_modules(bool load_elf) {
  // A backend with run control reads nothing while the target runs; one without (a VM's RAM) reads live.
  if (!modules_stale_ || exited_ || (running() && target_->has(TOOLHOST_DT_CAP_RUN_CONTROL))) return;
  // After a reboot, the kernel is looked for again at the first stop that is not the reboot's.
  if (windows_pending_ && windows_retry_ && last_stop_ && last_stop_->reason != TOOLHOST_DT_STOP_REBOOT) {
    windows_retry_ = false;  // once a stop: a scan costs seconds on a slow link
    discover_windows();
  }
  if (auto windows = windows_modules()) {
    symbols_.set_modules(*windows);
  } else if (target_->has(TOOLHOST_DT_CAP_MODULES)) {
    symbols_.set_modules(target_->modules());
  }
  modules_stale_ = false;
  resolve_deferred_breakpoints();
  if (!load_elf) return;
  for (const auto& m : symbols_.modules()) {
    if (m.state == symbol_state::deferred && is_elf_module(m)) symbols_.ensure_loaded(m);
  }
}

absl::Status session::set_symbol_path(std::string_view text) {
  auto path = symbols::symbol_path::parse(text);
  if (!path.ok()) return path.status();
  sympath_ = std::move(*path);
  return absl::OkStatus();
}

std::shared_ptr<const symbol_source> session::pdb_for(const module& m, const pe::image& image, std::string& problem) {
  auto cv = image.codeview();
  if (!cv.ok()) {
    problem = "its CodeView record cannot be read: " + std::string(cv.status().message());
    return nullptr;
  }
  if (!cv->has_value()) {
    problem = "the image names no PDB";
    return nullptr;
  }
  pdb_search search{sympath_};
  search.timeout = symbol_timeout_;
  search.cancelled = [this] { return cancelled_ != nullptr && *cancelled_ && (*cancelled_)(); };
  const std::string what = m.name;
  search.progress = [this, what](uint64_t done, uint64_t total, const std::string& url) {
    if (progress_ != nullptr) {
      (*progress_)(static_cast<double>(done), total != 0 ? static_cast<double>(total) : -1.0,
                   "Downloading symbols for " + what + " from " + url);
    }
  };
  auto pdb = find_pdb(**cv, search);
  if (!pdb.ok()) {
    problem = std::string(pdb.status().message());
    return nullptr;
  }
  return make_pdb_source(*pdb);
}

void session::resolve_deferred_breakpoints() {
  for (auto& b : breakpoints_) {
    if (!b.deferred) continue;
    auto address = evaluate(b.expression, *this);
    if (!address.ok()) {
      if (b.resolved && b.enabled) (void)disarm(b);
      b.resolved = false;
      continue;
    }
    if (b.resolved && *address == b.address) continue;
    if (b.resolved && b.enabled) (void)disarm(b);
    b.address = *address;
    b.resolved = true;
    if (b.enabled) {
      if (auto s = arm(b); !s.ok()) {
        b.resolved = false;
        (cancelled_ != nullptr ? out_ : notices_) += "Breakpoint " + std::to_string(b.id) + " (" + b.expression +
                                                     ") could not be set: " + std::string(s.message()) + "\n";
        continue;
      }
    }
    // Shown in the call that is running, else at the top of the next one.
    (cancelled_ != nullptr ? out_ : notices_) +=
        "Breakpoint " + std::to_string(b.id) + " (" + b.expression + ") is set at " + address_text(b.address) + "\n";
  }
}

bool session::is_elf_module(const module& m) const {
  if (target_->os() == "windows" || m.path.empty()) return false;
  std::ifstream in(m.path, std::ios::binary);
  char magic[4] = {};
  return static_cast<bool>(in.read(magic, 4)) && std::string_view(magic, 4) ==
                                                     "\x7f"
                                                     "ELF";
}

absl::StatusOr<std::shared_ptr<const pe::image>> session::module_image(const module& m) {
  const uint64_t base = m.base, size = m.size;
  target* t = target_.get();
  auto image = pe::image::from_memory(m.name, [t, base, size](uint64_t offset, std::span<uint8_t> out) -> size_t {
    if (size != 0 && offset >= size) return 0;
    const size_t want = size != 0 ? static_cast<size_t>(std::min<uint64_t>(out.size(), size - offset)) : out.size();
    auto bytes = t->read(base + offset, want);
    if (!bytes.ok()) return 0;
    std::memcpy(out.data(), bytes->data(), bytes->size());
    return bytes->size();
  });
  if (!image.ok()) return image.status();
  return std::make_shared<const pe::image>(std::move(*image));
}

module_symbols session::load_module_symbols(const module& m) {
  // An ELF file the target names (a process's libraries), with its DWARF and CFI ...
  if (is_elf_module(m)) {
    if (auto elf = elf_module_symbols(m)) {
      if (!elf->sources.empty()) add_dwarf_symbols(m, debug_paths_, *elf);
      return *elf;
    }
  }
  // ... a Linux module with no file (the vDSO): its ELF image in the target's memory ...
  if (target_->os() != "windows" && m.path.find('/') == std::string::npos) {
    auto image =
        memory_image_symbols(m, [this](uint64_t address, size_t size) { return target_->read(address, size); });
    if (image) return *image;
  }
  // ... else a PE image in the target's memory: its exports.
  module_symbols out;
  auto image = module_image(m);
  if (!image.ok()) {
    out.problem = m.path.empty() && target_->os() != "windows" ? "the target gives no file for it"
                                                               : std::string(image.status().message());
    return out;
  }
  out.pe_image = *image;
  out.facts = pe_facts(**image, m.path);
  out.unwinder = make_pe_unwinder(*image, m.base);
  if (!out.unwinder && (*image)->header().machine == pe::kMachineAmd64) {
    if (auto functions = (*image)->runtime_functions(); !functions.ok() && pe::is_hole(functions.status())) {
      std::string where, problem;
      out.unwinder = unwinder_from_image_file(
          sympath_, m.path.substr(m.path.find_last_of("\\/") + 1), **image, m.base, symbol_timeout_,
          [this] { return cancelled_ != nullptr && *cancelled_ && (*cancelled_)(); }, where, problem);
      if (out.unwinder) {
        out.facts.push_back(
            {"Unwind data", "from the image file on the symbol path, " + where + " (.pdata is paged out)"});
      } else {
        out.facts.push_back({"Unwind data", problem});
      }
    }
  }
  // The PDB first; the exports stay as the fallback (and for names the PDB lacks).
  std::string pdb_problem;
  if (auto pdb = pdb_for(m, **image, pdb_problem)) out.sources.push_back(std::move(pdb));
  auto exports = make_export_source(**image, m.path.substr(m.path.find_last_of("\\/") + 1));
  if (!exports.ok()) {
    if (out.sources.empty()) out.problem = std::string(exports.status().message());
  } else if (*exports) {
    out.sources.push_back(std::move(*exports));
  } else if (out.sources.empty()) {
    out.problem = "the image exports nothing";
  }
  if (!pdb_problem.empty()) out.problem = pdb_problem + (out.problem.empty() ? "" : "; " + out.problem);
  return out;
}

void session::refresh_threads() {
  if (running() || exited_) return;
  threads_ = target_->threads();
}

std::string session::symbol_of(uint64_t address) const { return symbols_.describe(address); }

std::string session::instruction_line(uint64_t address, bool with_header) {
  std::string line;
  if (with_header) {
    const std::string sym = symbol_of(address);
    const auto source = symbols_.line_at(address);
    if (!sym.empty()) line += sym + (source ? " " + source_text(*source) : "") + ":\n";
  }
  auto bytes = target_->read(address, 16);
  if (!bytes.ok())
    return line + address_text(address) + " ??              (" + std::string(bytes.status().message()) + ")\n";
  auto insn = decoder_.decode(address, *bytes);
  if (!insn.ok()) {
    return line + address_text(address) + " " + hex_digits(static_cast<uint8_t>((*bytes)[0]), 2) +
           "              (bad)\n";
  }
  std::string hexbytes;
  for (size_t i = 0; i < insn->length; ++i) hexbytes += hex_digits(static_cast<uint8_t>((*bytes)[i]), 2);
  if (hexbytes.size() < 16) hexbytes.resize(16, ' ');
  std::string text = windbg_instruction_text(insn->text, insn->mnemonic);
  // Name direct branch targets, as WinDbg does: "call demo!report (00005555`555551e9)".
  if (insn->target) {
    const std::string sym = symbol_of(*insn->target);
    if (!sym.empty()) text = windbg_mnemonic(insn->mnemonic) + " " + sym + " (" + address_text(*insn->target) + ")";
  } else if (insn->memory_target) {
    // rip-relative data: say what it points at.
    const std::string sym = symbol_of(*insn->memory_target);
    if (!sym.empty()) text += "  ; " + sym;
  }
  return line + address_text(address) + " " + hexbytes + " " + text + "\n";
}

std::string session::register_block(const register_values* frame_values) {
  auto r = regs();
  if (!r.ok()) return "";
  const auto& v = frame_values != nullptr ? *frame_values : **r;
  auto get = [&](const char* n) -> std::optional<uint64_t> {
    auto it = v.find(n);
    return it == v.end() ? std::nullopt : std::optional<uint64_t>(it->second);
  };
  std::string out;
  if (get("rax") && get("rip")) {
    static const char* const kRows[][3] = {{"rax", "rbx", "rcx"}, {"rdx", "rsi", "rdi"}, {"rip", "rsp", "rbp"},
                                           {"r8", "r9", "r10"},   {"r11", "r12", "r13"}, {"r14", "r15", nullptr}};
    for (const auto& row : kRows) {
      std::string line;
      for (const char* name : row) {
        if (name == nullptr) continue;
        if (!line.empty()) line += ' ';
        std::string label = name;
        if (label.size() < 3) label = " " + label;
        // An outer frame's register that its callee's unwind data does not restore.
        line += label + "=" + (get(name) ? hex16(*get(name)) : std::string(16, '?'));
      }
      out += line + "\n";
    }
    if (!get("eflags")) return out;  // an outer frame: no flags or segments of its own
    const uint64_t efl = get("eflags").value_or(0);
    static const std::pair<int, const char*> kFlags[] = {{11, "ov"}, {10, "dn"}, {9, "ei"}, {7, "ng"},
                                                         {6, "zr"},  {4, "ac"},  {2, "pe"}, {0, "cy"}};
    static const char* const kClear[] = {"nv", "up", "di", "pl", "nz", "na", "po", "nc"};
    std::string flags;
    for (size_t i = 0; i < 8; ++i)
      flags += std::string(((efl >> kFlags[i].first) & 1) ? kFlags[i].second : kClear[i]) + " ";
    std::string segs;
    for (const char* s : {"cs", "ss", "ds", "es", "fs", "gs"}) {
      if (auto x = get(s)) segs += std::string(s) + "=" + hex_digits(*x, 4) + "  ";
    }
    out += "iopl=" + std::to_string((efl >> 12) & 3) + "         " + flags + "\n";
    out += segs + "efl=" + hex_digits(efl, 8) + "\n";
    return out;
  }
  // Another architecture: every register, three to a line.
  int column = 0;
  for (const auto& reg : target_->registers()) {
    auto it = v.find(reg.name);
    if (it == v.end()) continue;
    out += reg.name + "=" + hex_digits(it->second, static_cast<int>(reg.bits / 4)) + (++column % 3 == 0 ? "\n" : " ");
  }
  if (column % 3 != 0) out += "\n";
  return out;
}

// ---- Run control ---------------------------------------------------------------------------

bool session::can_stop() const {
  if (!temporaries_.empty() || break_sent_) return true;
  return std::any_of(breakpoints_.begin(), breakpoints_.end(), [](const breakpoint& b) { return b.live(); });
}

absl::Status session::arm(const breakpoint& b) {
  if (!b.resolved) return absl::OkStatus();  // a deferred bu: set when it resolves
  return target_->set_breakpoint(b.type, b.address, b.length);
}

absl::Status session::disarm(const breakpoint& b) {
  if (!b.resolved) return absl::OkStatus();
  // Another enabled breakpoint of the same kind at the same place keeps the site armed.
  for (const auto& other : breakpoints_) {
    if (&other != &b && other.live() && other.type == b.type && other.address == b.address &&
        other.length == b.length) {
      return absl::OkStatus();
    }
  }
  return target_->clear_breakpoint(b.type, b.address, b.length);
}

void session::clear_temporaries() {
  std::vector<uint64_t> addresses;
  for (const auto& t : temporaries_) {
    if (std::find(addresses.begin(), addresses.end(), t.address) == addresses.end()) addresses.push_back(t.address);
  }
  temporaries_.clear();
  if (exited_) return;
  for (uint64_t address : addresses) {
    // A user breakpoint at the same place keeps the site armed.
    const bool shared = std::any_of(breakpoints_.begin(), breakpoints_.end(), [&](const breakpoint& b) {
      return b.live() && b.type == TOOLHOST_DT_BP_SOFTWARE && b.address == address;
    });
    if (!shared) (void)target_->clear_breakpoint(TOOLHOST_DT_BP_SOFTWARE, address, 1);
  }
}

void session::after_stop() {
  windows_retry_ = true;
  registers_.reset();
  selected_frame_ = 0;
  modules_stale_ = true;
  threads_.clear();
}

absl::StatusOr<bool> session::accept_stop(const toolhost_dt_stop_t& stop) {
  after_stop();
  pending_signal_ = 0;
  last_signal_.reset();
  if (stop.reason == TOOLHOST_DT_STOP_REBOOT) {
    // Everything read of the old kernel is stale: processes, modules, the scope.
    windows_pending_ = true;
    windows_.reset();
    scope_.reset();
    target_->set_translation({});
  }
  if (stop.reason == TOOLHOST_DT_STOP_EXITED || stop.reason == TOOLHOST_DT_STOP_TERMINATED) {
    exited_ = true;
    temporaries_.clear();
    last_stop_ = stop;
    std::string text = std::string("The target exited: ") + stop.description;
    if (stop.reason == TOOLHOST_DT_STOP_TERMINATED) {
      if (const auto* info = signals::by_number(static_cast<int>(stop.code)))
        text += std::string(", ") + info->description;
    }
    out_ += text + "\n";
    return true;
  }
  if (stop.reason == TOOLHOST_DT_STOP_SIGNAL) {
    const int number = static_cast<int>(stop.code);
    signal_event event = read_signal_event(stop);
    if (!signals_.stops(number)) {
      // Not a stop: pass it on (or drop it, when handled) at once, noting it if asked to.
      if (signals_.notifies(number)) {
        note(signal_line(stop, event) +
             (signals_.delivers(number) ? " - delivered to the program" : " - handled, not delivered"));
      }
      pending_signal_ = number;
      if (auto s = resume_target(last_resume_, std::nullopt); !s.ok()) return s;
      return false;
    }
    pending_signal_ = number;
    last_signal_ = event;
    clear_temporaries();
    last_stop_ = stop;
    render_stop(stop, signal_line(stop, event) + " (first chance)\n" + signal_hint(number));
    return true;
  }
  const uint64_t at = stop.pc;
  std::string banner;
  bool absorb = false;
  bool temporary_hit = false;
  if (stop.reason == TOOLHOST_DT_STOP_BREAKPOINT || stop.reason == TOOLHOST_DT_STOP_STEP) {
    for (const auto& t : temporaries_) {
      if (t.address != at) continue;
      if (t.min_sp) {
        auto s = sp();
        if (s.ok() && *s < *t.min_sp) continue;  // a deeper (recursive) call reached the same place
      }
      temporary_hit = true;
    }
  }
  breakpoint* hit = nullptr;
  for (auto& b : breakpoints_) {
    if (!b.live()) continue;
    const bool exec = b.type == TOOLHOST_DT_BP_SOFTWARE || b.type == TOOLHOST_DT_BP_HARDWARE;
    if (exec && stop.reason == TOOLHOST_DT_STOP_BREAKPOINT && b.address == at) hit = &b;
    if (!exec && stop.reason == TOOLHOST_DT_STOP_WATCHPOINT &&
        (stop.address == 0 || (stop.address >= b.address && stop.address < b.address + b.length))) {
      hit = &b;
    }
    if (hit != nullptr) break;
  }
  if (hit != nullptr) {
    bool stops = in_breakpoint_scope(*hit);
    ++(stops ? hit->hits : hit->foreign_hits);
    if (stops && !hit->condition.empty()) {
      auto v = eval(hit->condition);
      if (!v.ok()) {
        banner = "Breakpoint " + std::to_string(hit->id) + " condition failed to evaluate (" +
                 std::string(v.status().message()) + "); stopping.\n";
      } else if (*v == 0) {
        stops = false;
      }
    }
    if (stops && hit->passes_left > 1) {
      --hit->passes_left;
      stops = false;
    }
    if (stops) {
      hit->passes_left = hit->passes;
      banner += "Breakpoint " + std::to_string(hit->id) + " hit";
      if (stop.reason == TOOLHOST_DT_STOP_WATCHPOINT && stop.address != 0)
        banner += " (data at " + address_text(stop.address) + ")";
      if (hit->one_shot) {
        const breakpoint copy = *hit;
        hit->enabled = false;
        (void)disarm(copy);
        breakpoints_.erase(std::find_if(breakpoints_.begin(), breakpoints_.end(),
                                        [&](const breakpoint& b) { return b.id == copy.id; }));
      }
    } else if (!temporary_hit) {
      absorb = true;
    }
  } else if (stop.reason == TOOLHOST_DT_STOP_BREAKPOINT && !temporary_hit) {
    const bool ours_below = std::any_of(temporaries_.begin(), temporaries_.end(),
                                        [&](const temporary_breakpoint& t) { return t.address == at; });
    if (ours_below) {
      absorb = true;  // our return breakpoint, hit by a deeper frame
    } else {
      banner = std::string("Break instruction exception (") + stop.description + ")";
    }
  } else if (stop.reason == TOOLHOST_DT_STOP_INTERRUPT) {
    banner = std::string("Break-in: the target stopped (") + stop.description + ")";
  } else if (stop.reason == TOOLHOST_DT_STOP_EXCEPTION || stop.reason == TOOLHOST_DT_STOP_BUGCHECK ||
             stop.reason == TOOLHOST_DT_STOP_REBOOT || stop.reason == TOOLHOST_DT_STOP_MODULE_LOAD ||
             stop.reason == TOOLHOST_DT_STOP_UNKNOWN || stop.reason == TOOLHOST_DT_STOP_WATCHPOINT) {
    banner = stop.description;
  }
  if (absorb && break_sent_ && hit != nullptr) {
    // A break-in is pending and the target has just stopped: this stop answers it. (A halted
    // kernel drops the break-in byte, as Windows' kdcom does, so resuming would lose it.)
    absorb = false;
    banner = "Break-in: the target stopped at breakpoint " + std::to_string(hit->id) + " (a hit outside its scope)";
  }
  if (absorb) {
    if (auto s = resume_target(TOOLHOST_DT_CONTINUE, std::nullopt); !s.ok()) return s;
    return false;
  }
  clear_temporaries();
  last_stop_ = stop;
  render_stop(stop, banner);
  return true;
}

bool session::in_breakpoint_scope(const breakpoint& b) {
  if (b.process == 0 && b.thread == 0) return true;
  if (b.thread != 0 && current_ethread() != b.thread) return false;
  if (b.process != 0) {
    const auto p = current_process();
    if (!p || p->eprocess != b.process) return false;
  }
  return true;
}

void session::render_stop(const toolhost_dt_stop_t& stop, const std::string& banner) {
  if (!banner.empty()) out_ += banner + "\n";
  out_ += register_block();
  refresh_modules();
  out_ += instruction_line(stop.pc, true);
  // The stack, as ntoseye renders a stop: its first frames (k shows the rest).
  constexpr size_t kStopFrames = 5;
  if (auto frames = walk_stack(kStopFrames + 1); frames.ok() && frames->size() > 1) {
    const bool more = frames->size() > kStopFrames;
    if (more) frames->resize(kStopFrames);
    out_ += stack_text(*frames, false, false, nullptr);
    if (more) out_ += "(k shows the rest of the stack)\n";
  }
}

void session::collect_stop_while_halted() {
  if (exited_ || !target_->has(TOOLHOST_DT_CAP_RUN_CONTROL) || running()) return;
  auto stop = target_->wait_stop(std::chrono::milliseconds(0));
  if (!stop.ok() || !*stop) return;
  auto accepted = accept_stop(**stop);
  if (!accepted.ok()) {
    out_ += std::string(accepted.status().message()) + "\n";
  } else if (*accepted) {
    refuse_resume_once_ = true;
  }
}

absl::StatusOr<bool> session::wait_for_stop(clock::time_point deadline) {
  for (;;) {
    if (cancelled_ != nullptr && *cancelled_ && (*cancelled_)()) return false;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    auto stop = target_->wait_stop(std::clamp(left, std::chrono::milliseconds(0), std::chrono::milliseconds(kSlice)));
    if (!stop.ok()) return stop.status();
    if (*stop) {
      auto accepted = accept_stop(**stop);
      if (!accepted.ok()) return accepted.status();
      if (*accepted) return true;
      continue;
    }
    if (clock::now() >= deadline) return false;
  }
}

absl::Status session::resume_target(toolhost_dt_resume_t how, std::optional<bool> deliver) {
  if (signals_dirty_) {
    // Ignored, not-handled signals never reach us where the backend can pass them itself.
    auto s = target_->pass_signals(signals_.background());
    if (!s.ok() && !absl::IsUnimplemented(s)) return s;
    signals_dirty_ = false;
  }
  int signal = 0;
  if (pending_signal_ != 0 && deliver.value_or(signals_.delivers(pending_signal_))) signal = pending_signal_;
  if (signal != 0 && !target_->can_deliver_signals()) {
    return absl::UnimplementedError("the " + target_->backend() + " backend cannot deliver " +
                                    signals::name_of(signal) + " to the program; `gh` resumes without it");
  }
  registers_.reset();
  selected_frame_ = 0;
  if (auto s = target_->resume(how, -1, signal); !s.ok()) return s;
  pending_signal_ = 0;
  last_resume_ = how;
  return absl::OkStatus();
}

absl::Status session::resume_and_wait(toolhost_dt_resume_t how, std::optional<bool> deliver) {
  if (!target_->has(TOOLHOST_DT_CAP_RUN_CONTROL)) {
    std::string text = "the " + target_->backend() + " backend cannot run the target (it is a snapshot)";
    if (pending_signal_ != 0) text += " and cannot deliver " + signals::name_of(pending_signal_) + " to it";
    return absl::UnimplementedError(text);
  }
  break_sent_.reset();
  if (auto s = resume_target(how, deliver); !s.ok()) return s;
  auto stopped = wait_for_stop(deadline_);
  if (!stopped.ok()) return stopped.status();
  return absl::OkStatus();
}

absl::Status session::step_over_once() {
  auto at = pc();
  if (!at.ok()) return at.status();
  auto bytes = target_->read(*at, 16);
  if (bytes.ok()) {
    auto insn = decoder_.decode(*at, *bytes);
    if (insn.ok() && insn->is_call()) {
      auto s = sp();
      if (!s.ok()) return s.status();
      const uint64_t next = *at + insn->length;
      if (auto st = target_->set_breakpoint(TOOLHOST_DT_BP_SOFTWARE, next, 1); !st.ok()) return st;
      temporaries_.push_back({next, *s});
      return resume_and_wait(TOOLHOST_DT_CONTINUE);
    }
  }
  return resume_and_wait(TOOLHOST_DT_STEP);
}

// ---- The line ------------------------------------------------------------------------------

absl::Status session::usage_error(const std::string& name, const std::string& problem) const {
  const command_spec* spec = find_command(name);
  std::string text = problem;
  if (spec != nullptr) text += "\nUsage: " + spec->usage;
  return absl::InvalidArgumentError(text);
}

line_result session::run_line(std::string_view line, std::chrono::milliseconds timeout,
                              const std::function<bool()>& cancelled, const progress_fn& progress) {
  result_json_ = "null";
  deadline_ = clock::now() + timeout;
  cancelled_ = &cancelled;
  progress_ = progress ? &progress : nullptr;
  refuse_resume_once_ = false;
  line_result result;

  // A stop that arrived while nobody was asking is shown first; a resuming command in this
  // call is then refused once so that the stop is seen before it is continued past.
  out_ = std::exchange(notices_, {});
  if (has_parked_) {
    out_ += std::exchange(parked_, {});
    has_parked_ = false;
    refuse_resume_once_ = true;
  } else if (!running()) {
    collect_stop_while_halted();
  } else {
    for (;;) {
      auto stop = target_->wait_stop(std::chrono::milliseconds(0));
      if (!stop.ok() || !*stop) break;
      auto accepted = accept_stop(**stop);
      if (!accepted.ok()) {
        out_ += std::string(accepted.status().message()) + "\n";
        result.error = true;
        break;
      }
      if (*accepted) {
        refuse_resume_once_ = true;
        break;
      }
    }
  }

  const auto commands = split_commands(line);
  if (commands.empty() && running()) {
    // An empty line runs nothing and only waits.
    if (auto s = wait_for_stop(deadline_); !s.ok()) {
      out_ += std::string(s.status().message()) + "\n";
      result.error = true;
    }
  }
  for (const auto& text : commands) {
    if (result.error) break;
    parsed_command cmd = parse_command(text);
    const command_spec* spec = find_command(cmd.name);
    if (spec == nullptr && cmd.name.size() > 2 && cmd.name.rfind("lm", 0) == 0) {
      // lmv, lmvm nt, lmDvmnt: lm with its option letters run on.
      cmd.args = cmd.name.substr(2) + " " + cmd.args;
      cmd.name = "lm";
      spec = find_command(cmd.name);
    }
    if (spec == nullptr) {
      out_ += "Unknown command '" + cmd.name + "'. `help` lists every command.\n";
      result.error = true;
      break;
    }
    run_kind kind = spec->kind;
    if (cmd.name == "~" && !cmd.args.empty()) kind = run_kind::halted;  // "~1s" selects
    // A Windows kernel in a VM's RAM (no run control): its version and processors are read live.
    if ((cmd.name == "vertarget" || cmd.name == "version" || cmd.name == "~") && windows_ &&
        !target_->has(TOOLHOST_DT_CAP_RUN_CONTROL) && kind == run_kind::halted)
      kind = run_kind::any;
    if (exited_ && kind != run_kind::any) {
      out_ += "The target has exited; '" + text + "' was not run. `close` the session and `open` a new one.\n";
      result.error = true;
      break;
    }
    if (kind == run_kind::resume && refuse_resume_once_) {
      out_ += "The target stopped (above); '" + text +
              "' was not run, so that the stop is seen before it is continued past. Re-issue it to continue.\n";
      refuse_resume_once_ = false;
      result.error = true;
      break;
    }
    if ((kind == run_kind::halted || kind == run_kind::resume) && running()) {
      if (!can_stop()) {
        out_ +=
            "'" + text + "' needs a halted target and nothing is set to stop it (no breakpoint); use `break` first.\n";
        result.error = true;
        break;
      }
      auto stopped = wait_for_stop(deadline_);
      if (!stopped.ok()) {
        out_ += std::string(stopped.status().message()) + "\n";
        result.error = true;
        break;
      }
      if (!*stopped) {
        out_ += "The target is still running after " + std::to_string(timeout.count()) + " ms; '" + text +
                "' was not run. " +
                (break_sent_ ? break_in_failure() : "Re-issue it to keep waiting, or `break` to stop the target.") +
                "\n";
        result.error = true;
        break;
      }
      if (kind == run_kind::resume) {
        out_ += "The target stopped (above); '" + text +
                "' was not run, so that the stop is seen before it is continued past. Re-issue it to continue.\n";
        result.error = true;
        break;
      }
    }
    auto status = (this->*spec->run)(cmd.name, cmd.args);
    if (!status.ok()) {
      out_ += std::string(status.message()) + "\n";
      result.error = true;
      break;  // a failing command ends the line
    }
    if (detach_requested_) {
      detach_skipped_rest_ = &text != &commands.back();
      break;
    }
    collect_stop_while_halted();
  }

  if (!running() && !detach_requested_) refresh_modules();
  if (notices_dropped_ != 0) {
    out_ += "(" + std::to_string(notices_dropped_) + " more signal notices are not shown)\n";
  }
  notice_count_ = notices_dropped_ = 0;
  result.output = out_;
  result.result_json = result_json_;
  result.trailer = trailer();
  result.target_json = target_json();
  for (const auto& l : split_lines(target_->read_output())) {
    if (!l.empty()) result.debug_output.push_back(l);
  }
  cancelled_ = nullptr;
  progress_ = nullptr;
  return result;
}

void session::service() {
  // Several stops that do not count (signals passed on, false conditions) may come in one
  // tick; each is resumed at once, so a program with a fast timer is not held to the tick.
  for (int round = 0; round < 64; ++round) {
    if (has_parked_ || !running()) return;
    auto stop = target_->wait_stop(std::chrono::milliseconds(0));
    if (!stop.ok() || !*stop) return;
    const std::string saved = std::exchange(out_, {});
    auto accepted = accept_stop(**stop);
    if (!accepted.ok()) {
      out_ += std::string(accepted.status().message()) + "\n";
      accepted = true;
    }
    if (*accepted) {
      parked_ = std::move(out_);
      has_parked_ = true;
    } else {
      notices_ += out_;  // what an absorbed stop noted, for the next call
    }
    out_ = saved;
  }
}

void session::note(const std::string& line) {
  // A program with a fast timer under sxn would flood the agent: keep the first notices since
  // the last result and count the rest.
  constexpr size_t kKept = 50;
  if (notice_count_ < kKept) {
    out_ += line + "\n";
    ++notice_count_;
  } else {
    ++notices_dropped_;
  }
}

session::signal_event session::read_signal_event(const toolhost_dt_stop_t& stop) {
  signal_event e;
  e.number = static_cast<int>(stop.code);
  auto raw = target_->siginfo();
  if (!raw.ok() || raw->size() < 16) return e;
  auto i32 = [&](size_t at) -> std::optional<int32_t> {
    if (at + 4 > raw->size()) return std::nullopt;
    int32_t v = 0;
    std::memcpy(&v, raw->data() + at, 4);
    return v;
  };
  // siginfo_t: si_signo, si_errno, si_code, then the union (after padding on 64-bit targets).
  const bool wide = target_->arch().find("64") != std::string::npos;
  const size_t fields = wide ? 16 : 12;
  e.code = i32(8);
  if (signals::has_fault_address(e.number) && e.code && *e.code > 0) {
    uint64_t address = 0;
    const size_t width = wide ? 8 : 4;
    if (fields + width <= raw->size()) {
      std::memcpy(&address, raw->data() + fields, width);
      e.address = address;
    }
  } else if (e.number == 17 && e.code && *e.code > 0) {
    e.child = i32(fields);
    e.child_status = i32(fields + 8);
  } else if (e.code && (*e.code <= 0)) {
    e.sender = i32(fields);
  }
  return e;
}

std::string session::signal_line(const toolhost_dt_stop_t& stop, const signal_event& e) {
  const std::string pid = target_->hint("pid");
  std::string line = "(" + (pid.empty() ? std::string("?") : pid) + "." +
                     (stop.thread >= 0 ? std::to_string(stop.thread) : std::string("?")) + "): Signal " +
                     signals::name_of(e.number) + " (" + std::to_string(e.number) + ")";
  if (const auto* info = signals::by_number(e.number)) line += std::string(" ") + info->description;
  if (e.code) {
    const std::string meaning = signals::code_text(e.number, *e.code);
    line += " - code " + (meaning.empty() ? std::to_string(*e.code) : meaning);
  }
  if (e.address) line += ", address " + address_text(*e.address);
  if (e.sender && *e.sender > 0) line += ", from process " + std::to_string(*e.sender);
  if (e.child) {
    line += ", child " + std::to_string(*e.child);
    if (e.child_status && e.code) {
      line += *e.code == 1 ? " exit status " + std::to_string(*e.child_status)
                           : " signal " + signals::name_of(*e.child_status);
    }
  }
  return line;
}

std::string session::signal_hint(int signal) {
  const std::string name = signals::name_of(signal);
  if (!target_->has(TOOLHOST_DT_CAP_RUN_CONTROL)) {
    return "This " + target_->backend() + " target is a snapshot: it cannot resume or deliver " + name +
           "; it shows the process as it was at the signal.";
  }
  if (!target_->can_deliver_signals()) {
    return "The " + target_->backend() + " backend cannot deliver signals: `g` resumes without " + name + ".";
  }
  if (signals_.delivers(signal)) {
    return "`g` or `gn` delivers " + name + " to the program; `gh` resumes without it (the program never sees it).";
  }
  return "`g` or `gh` resumes without " + name + " (it is marked handled; `sxd -h " + name +
         "` changes that); `gn` delivers it to the program.";
}

std::string session::attach_text() {
  out_.clear();
  auto stop = target_->wait_stop(std::chrono::milliseconds(0));
  if (stop.ok() && *stop) {
    after_stop();
    last_stop_ = **stop;
  }
  // A Windows kernel behind the target? Its modules and symbols come from it if so.
  discover_windows();
  if (stop.ok() && *stop) {
    refresh_modules();
    if ((*stop)->reason == TOOLHOST_DT_STOP_SIGNAL) {
      const signal_event event = read_signal_event(**stop);
      last_signal_ = event;
      pending_signal_ = event.number;
      render_stop(**stop, std::string((*stop)->description) + "\n" + signal_line(**stop, event) + "\n" +
                              signal_hint(event.number));
    } else {
      render_stop(**stop, (*stop)->description);
    }
  }
  return out_;
}

// ---- Trailer and snapshot -------------------------------------------------------------------

std::string session::trailer() {
  if (exited_) return "[target exited]";
  // The .process scope outlives resumes (the seed's trailer); a VM's RAM is read while it runs.
  if (running()) return "[target running" + scope_trailer() + "]";
  auto at = pc();
  if (!at.ok()) return "[target halted]";
  if (threads_.empty()) refresh_threads();
  int64_t index = 0;
  for (size_t i = 0; i < threads_.size(); ++i) {
    if (threads_[i].current) index = static_cast<int64_t>(i);
  }
  std::string text = "[target halted @ " + std::to_string(index) + " " + address_text(*at);
  const std::string sym = symbol_of(*at);
  if (!sym.empty()) text += " " + sym;
  // After a reboot the kernel's state must be found again: "rediscovery pending" until it is
  // (session_windows.cpp); then the process the vCPU runs and the .process scope.
  text += windows_trailer();
  const std::string exe = target_->hint("executable");
  const std::string pid = target_->hint("pid");
  if (!exe.empty() && !pid.empty()) {
    text += " | process " + exe.substr(exe.rfind('/') + 1) + " (" + pid + ")";
  }
  return text + "]";
}

std::string session::target_json() {
  const bool is_running = running();
  std::string j = R"({"running":)" + std::string(is_running ? "true" : "false");
  if (!is_running && !exited_) {
    if (threads_.empty()) refresh_threads();
    int64_t index = -1, id = -1;
    for (size_t i = 0; i < threads_.size(); ++i) {
      if (threads_[i].current) {
        index = static_cast<int64_t>(i);
        id = threads_[i].id;
      }
    }
    auto at = pc();
    j += R"(,"current_thread":)" + (index >= 0 ? std::to_string(index) : "null");
    j += R"(,"rip":)" + (at.ok() ? sdk::quote(hex(*at)) : "null");
    const std::string sym = at.ok() ? symbol_of(*at) : "";
    j += R"(,"symbol":)" + (sym.empty() ? "null" : sdk::quote(sym));
    if (!windows_) j += R"(,"stopped_thread":)" + (id >= 0 ? std::to_string(id) : "null");
  } else {
    j += R"(,"current_thread":null,"rip":null,"symbol":null)";
    if (!windows_) j += R"(,"stopped_thread":null)";
  }
  if (windows_) {
    // A Windows kernel: the scope, the stopped vCPU's process and thread (session_windows.cpp).
    j += windows_target_json();
  } else {
    const std::string exe = target_->hint("executable");
    const std::string pid = target_->hint("pid");
    std::string process = "null";
    if (!exe.empty()) {
      process = R"({"name":)" + sdk::quote(exe.substr(exe.rfind('/') + 1)) + R"(,"pid":)" +
                (pid.empty() ? "null" : pid) + "}";
    }
    j += R"(,"attached_process":null,"stopped_process":)" + (is_running ? std::string("null") : process);
    j += R"(,"coherent":)" + std::string(exited_ || windows_pending_ ? "false" : "true");
    const std::string kernel = target_->hint("kernel_base");
    j += R"(,"kernel_base":)" + (kernel.empty() ? "null" : sdk::quote(kernel));
  }
  j += R"(,"exited":)" + std::string(exited_ ? "true" : "false");
  if (exited_ && last_stop_) {
    j += last_stop_->reason == TOOLHOST_DT_STOP_TERMINATED
             ? R"(,"exit":{"signal":)" + std::to_string(last_stop_->code) + R"(,"name":)" +
                   sdk::quote(signals::name_of(static_cast<int>(last_stop_->code))) + "}"
             : R"(,"exit":{"status":)" + std::to_string(last_stop_->code) + "}";
  } else if (!is_running && last_signal_) {
    j += R"(,"signal":{"number":)" + std::to_string(last_signal_->number) + R"(,"name":)" +
         sdk::quote(signals::name_of(last_signal_->number));
    if (last_signal_->code) j += R"(,"code":)" + std::to_string(*last_signal_->code);
    if (last_signal_->address) j += R"(,"address":)" + sdk::quote(hex(*last_signal_->address));
    j += R"(,"pending":)" + std::string(pending_signal_ != 0 ? "true" : "false") + "}";
  }
  j += "}";
  return j;
}

}  // namespace toolhost::debugger
