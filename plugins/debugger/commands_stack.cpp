// The stack: the walk (stack_walker over each module's unwinder) and `k`/`kn`.
#include <cstring>
#include <map>

#include <toolhost/sdk/json.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

// x86-64 register names in DWARF's numbering.
constexpr const char* kDwarfNames[unwind_registers::kCount] = {
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"};

constexpr size_t kPage = 4096;

}  // namespace

absl::StatusOr<std::vector<session::frame>> session::walk_stack(size_t max_frames) {
  auto r = regs();
  if (!r.ok()) return r.status();
  refresh_modules();
  unwind_registers start;
  for (int n = 0; n < unwind_registers::kCount; ++n) {
    auto it = (*r)->find(kDwarfNames[n]);
    if (it != (*r)->end()) start.value[n] = it->second;
  }
  if (!start.value[kRegPc]) {
    // Another architecture's map: its pc and sp by role, no unwind data.
    if (auto p = pc(); p.ok()) start.value[kRegPc] = *p;
    if (auto s = sp(); s.ok()) start.value[kRegSp] = *s;
  }
  // Stack words are read a page at a time: one round trip serves a frame and its neighbours.
  std::map<uint64_t, std::string> pages;
  const dwarf::memory_reader memory = [&](uint64_t address, int size) -> std::optional<uint64_t> {
    uint64_t value = 0;
    for (int i = 0; i < size; ++i) {
      const uint64_t at = address + static_cast<uint64_t>(i);
      const uint64_t page = at & ~(kPage - 1);
      auto it = pages.find(page);
      if (it == pages.end()) {
        if (pages.size() > 256) return std::nullopt;  // a runaway walk reads no further
        auto bytes = target_->read(page, kPage);
        it = pages.emplace(page, bytes.ok() ? std::move(*bytes) : std::string()).first;
      }
      const size_t off = at - page;
      if (off >= it->second.size()) return std::nullopt;
      value |= static_cast<uint64_t>(static_cast<uint8_t>(it->second[off])) << (8 * i);
    }
    return value;
  };
  const auto walked = debugger::walk_stack(
      start,
      [this](uint64_t at) -> const frame_unwinder* {
        const module* m = symbols_.module_at(at);
        return m != nullptr ? m->unwinder.get() : nullptr;
      },
      memory, max_frames);
  std::vector<frame> frames;
  for (size_t i = 0; i < walked.size(); ++i) {
    frame f;
    f.ip = walked[i].pc;
    f.sp = walked[i].sp;
    f.return_address = i + 1 < walked.size() ? walked[i + 1].pc : 0;
    f.how = walked[i].how;
    f.activation = walked[i].activation;
    f.signal_trampoline = walked[i].signal_trampoline;
    frames.push_back(f);
  }
  return frames;
}

absl::Status session::cmd_stack(const std::string& name, std::string_view args) {
  uint64_t max = 0x40;
  if (!trim(args).empty()) {
    auto n = eval(args);
    if (!n.ok() || *n == 0 || *n > 0x400) return usage_error(name, "the frame count must be from 1 to 0x400");
    max = *n;
  }
  auto frames = walk_stack(static_cast<size_t>(max));
  if (!frames.ok()) return frames.status();
  const bool numbered = name == "kn";
  out_ += std::string(numbered ? " # " : "") + "Child-SP          RetAddr               Call Site\n";
  std::string json = R"({"frames":[)";
  size_t number = 0;
  auto add = [&](const std::string& columns, const std::string& site, const frame& f, const std::string& function,
                 const std::optional<dwarf::source_line>& line, bool inlined) {
    out_ += (numbered ? hex_digits(number, 2) + " " : "") + columns + "     " + site + "\n";
    json += std::string(number ? "," : "") + R"({"index":)" + std::to_string(number) + R"(,"sp":)" +
            sdk::quote(hex(f.sp)) + R"(,"ip":)" + sdk::quote(hex(f.ip)) + R"(,"return_address":)" +
            sdk::quote(hex(f.return_address)) + R"(,"symbol":)" + sdk::quote(symbol_of(f.ip)) + R"(,"function":)" +
            sdk::quote(function) + R"(,"inline":)" + (inlined ? "true" : "false") + R"(,"unwind":)" +
            sdk::quote(f.how == frame_origin::cfi ? "cfi" : f.how == frame_origin::frame_pointer ? "frame pointer" : "context");
    if (line) json += R"(,"source":{"file":)" + sdk::quote(line->file) + R"(,"line":)" + std::to_string(line->line) + "}";
    json += R"(,"signal_trampoline":)" + std::string(f.signal_trampoline ? "true" : "false") + "}";
    ++number;
  };
  for (const auto& f : *frames) {
    // A return address is the instruction after the call: its line and inline scopes are those
    // of the call (pc - 1), as gdb takes them.
    const uint64_t lookup = f.activation ? f.ip : f.ip - 1;
    const module* m = symbols_.module_at(f.ip);
    std::vector<dwarf::function_scope> scopes;
    std::optional<dwarf::source_line> line;
    if (m != nullptr && m->debug) {
      scopes = m->debug->functions_at(lookup);
      line = m->debug->line_at(lookup);
    }
    // Inline functions first, innermost first; each outer one is at its inline's call site.
    for (size_t s = 0; s + 1 < scopes.size(); ++s) {
      const std::string site = (m != nullptr ? m->name + "!" : "") + scopes[s].name +
                               (line ? " " + source_text(*line) : "") + " (inline)";
      add("(Inline Function) --------`--------", site, f, scopes[s].name, line, true);
      line = scopes[s].call_site;
    }
    std::string site = symbol_of(f.ip);
    if (site.empty()) site = address_text(f.ip);
    const std::string function = scopes.empty() ? "" : scopes.back().name;
    if (line) site += " " + source_text(*line);
    if (f.signal_trampoline) site += " (signal handler called)";
    if (f.how == frame_origin::frame_pointer) site += " (found by frame pointer: no unwind data for the frame below)";
    add(address_text(f.sp) + " " + address_text(f.return_address), site, f, function, line, false);
  }
  result_json_ = json + "]}";
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
