// The stack: the walk (stack_walker over each module's unwinder, inline frames from the symbol
// sources), `k` and its variants, `.frame` and `dv`.
#include <cstring>
#include <map>

#include <toolhost/sdk/json.hpp>
#include <toolhost/types/dt.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

// x86-64 register names in DWARF's numbering.
constexpr const char* kDwarfNames[unwind_registers::kCount] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi",
                                                               "rbp", "rsp", "r8",  "r9",  "r10", "r11",
                                                               "r12", "r13", "r14", "r15", "rip"};

constexpr size_t kPage = 4096;
// kb's column: four addresses (17 characters each) and the blanks between them.
const std::string kArgsHeader = "Args to Child" + std::string(4 * 17 + 3 - 13, ' ');
constexpr size_t kMaxStackPages = 256;

const char* origin_name(frame_origin how) {
  switch (how) {
    case frame_origin::cfi: return "cfi";
    case frame_origin::unwind_info: return "pdata";
    case frame_origin::frame_pointer: return "frame pointer";
    case frame_origin::context: break;
  }
  return "context";
}

}  // namespace

stack_reader session::stack_memory(std::map<uint64_t, std::string>& pages) {
  // Stack words are read a page at a time: one round trip serves a frame and its neighbours.
  return [this, &pages](uint64_t address, int size) -> std::optional<uint64_t> {
    uint64_t value = 0;
    for (int i = 0; i < size; ++i) {
      const uint64_t at = address + static_cast<uint64_t>(i);
      const uint64_t page = at & ~(kPage - 1);
      auto it = pages.find(page);
      if (it == pages.end()) {
        if (pages.size() >= kMaxStackPages) return std::nullopt;  // a runaway walk reads no further
        auto bytes = target_->read(page, kPage);
        it = pages.emplace(page, bytes.ok() ? std::move(*bytes) : std::string()).first;
      }
      const size_t off = at - page;
      if (off >= it->second.size()) return std::nullopt;
      value |= static_cast<uint64_t>(static_cast<uint8_t>(it->second[off])) << (8 * i);
    }
    return value;
  };
}

absl::StatusOr<std::vector<walked_frame>> session::walk_physical(size_t max_frames,
                                                                 std::map<uint64_t, std::string>& pages) {
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
  return debugger::walk_stack(
      start,
      [this](uint64_t at) -> const frame_unwinder* {
        const module* m = symbols_.module_at(at);
        if (m == nullptr) return nullptr;
        return symbols_.ensure_loaded(*m).symbols.unwinder.get();
      },
      stack_memory(pages), max_frames);
}

absl::StatusOr<std::vector<session::frame>> session::walk_stack(size_t max_frames) {
  std::map<uint64_t, std::string> pages;
  auto walked = walk_physical(max_frames, pages);
  if (!walked.ok()) return walked.status();
  std::vector<frame> frames;
  // Appends `f` and the inline frames inside it (innermost first; each outer one is at its
  // inline's call site). Returns the entry of the out-of-line function, 0 when unknown.
  size_t groups = 0;
  auto expand = [&](frame f) -> uint64_t {
    f.group = groups++;
    // A return address is the instruction after the call: its line and inline scopes are those
    // of the call (pc - 1), as gdb takes them. The signal trampoline is entered at its start.
    const uint64_t lookup = f.activation || f.signal_trampoline ? f.ip : f.ip - 1;
    f.mod = symbols_.module_at(f.ip);
    std::vector<scope_hit> scopes;
    if (f.mod != nullptr) {
      for (const auto& s : symbols_.ensure_loaded(*f.mod).symbols.sources) {
        scopes = s->scopes_at(lookup - f.mod->base);
        f.line = s->line_at(lookup - f.mod->base);
        if (!scopes.empty() || f.line) {
          f.source = s.get();
          break;
        }
      }
    }
    if (f.tail_call && !scopes.empty()) {
      // A tail-call frame stands for the innermost function at its call site, as gdb shows it
      // (its inline callers are not frames of their own).
      f.function = scopes.front().name;
      frames.push_back(std::move(f));
      return 0;
    }
    for (size_t s = 0; s + 1 < scopes.size() && frames.size() < max_frames; ++s) {
      frame in = f;
      in.inlined = true;
      in.inline_depth = s;
      in.function = scopes[s].name;
      frames.push_back(in);
      f.line = scopes[s].call_site;
    }
    if (frames.size() >= max_frames) return 0;
    f.inline_depth = scopes.empty() ? 0 : scopes.size() - 1;
    if (!scopes.empty()) f.function = scopes.back().name;
    const uint64_t entry = scopes.empty() || f.mod == nullptr ? 0 : f.mod->base + scopes.back().entry;
    frames.push_back(std::move(f));
    return entry;
  };
  uint64_t callee_entry = 0;
  const module* callee_module = nullptr;
  for (size_t i = 0; i < walked->size() && frames.size() < max_frames; ++i) {
    const walked_frame& w = (*walked)[i];
    frame f;
    f.ip = w.pc;
    f.sp = w.sp;
    f.return_address = i + 1 < walked->size() ? (*walked)[i + 1].pc : 0;
    f.how = w.how;
    f.activation = w.activation;
    f.signal_trampoline = w.signal_trampoline;
    f.regs = w.regs;
    f.physical = i;
    // Functions the callee was reached through by tail calls (gdb's tail-call frames).
    const module* m = symbols_.module_at(f.ip);
    if (i > 0 && !f.activation && callee_entry != 0 && m != nullptr && m == callee_module && m->best() != nullptr) {
      for (uint64_t rp : m->best()->tail_calls(f.ip - m->base, callee_entry - m->base)) {
        if (frames.size() >= max_frames) break;
        frame t = f;
        t.ip = m->base + rp;
        t.tail_call = true;
        t.return_address = f.ip;
        expand(t);
      }
    }
    callee_entry = expand(f);
    callee_module = m;
  }
  return frames;
}

std::vector<variable_value> session::frame_variables(const std::vector<frame>& frames, size_t index,
                                                     const stack_reader& memory) {
  const frame& f = frames[index];
  if (f.source == nullptr || f.mod == nullptr) return {};
  auto query_of = [&](const frame& g) {
    frame_query q;
    q.offset = g.ip - g.mod->base;
    q.activation = g.activation;
    q.regs = g.regs;
    q.inline_depth = g.inline_depth;
    q.memory = &memory;
    return q;
  };
  // The callers, one per frame group after this one (an inline chain or a tail-call frame is a
  // group), answer for values at a function's entry through their call sites; the chain ends at
  // a frame without debug information.
  std::vector<frame_query> callers;
  std::vector<const symbol_source*> sources;
  size_t group = f.group;
  for (size_t i = index + 1; i < frames.size() && callers.size() < 16; ++i) {
    const frame& c = frames[i];
    if (c.group == group) continue;
    group = c.group;
    if (c.mod == nullptr || c.source == nullptr) break;
    callers.push_back(query_of(c));
    sources.push_back(c.source);
  }
  for (size_t i = 0; i + 1 < callers.size(); ++i) {
    callers[i].caller = &callers[i + 1];
    callers[i].caller_source = sources[i + 1];
  }
  frame_query q = query_of(f);
  if (!callers.empty()) {
    q.caller = &callers[0];
    q.caller_source = sources[0];
  }
  return f.source->variables(q);
}

std::string session::variable_text(const frame& f, const variable_value& v, std::string* json) {
  const types::type_table* table = f.source != nullptr ? f.source->types() : nullptr;
  if (v.where == variable_value::state::unavailable || table == nullptr || v.type == types::kNoType) {
    if (json != nullptr)
      *json = R"({"available":false,"problem":)" + sdk::quote(v.problem.empty() ? "optimized out" : v.problem) + "}";
    return "<value unavailable>";
  }
  // A value that lives in registers is shown from its bytes, as if it were in memory at an
  // address no x86-64 program can use.
  constexpr uint64_t kBytesAt = 0x8000000000000000ull;
  const uint64_t address = v.where == variable_value::state::memory ? v.address : kBytesAt;
  types::dt_request r{*table, v.type, ""};
  r.address = address;
  r.read = [this, &v, address](uint64_t a, std::span<uint8_t> out) -> size_t {
    if (v.where == variable_value::state::bytes && a >= address && a - address < v.bytes.size()) {
      const size_t n = std::min<size_t>(out.size(), v.bytes.size() - (a - address));
      std::memcpy(out.data(), v.bytes.data() + (a - address), n);
      return n;
    }
    auto bytes = target_->read(a, out.size());
    if (!bytes.ok()) return 0;
    std::memcpy(out.data(), bytes->data(), bytes->size());
    return bytes->size();
  };
  r.describe = [this](uint64_t a) { return symbol_of(a); };
  auto value = types::render_value(r);
  if (!value.ok()) {
    if (json != nullptr)
      *json = R"({"available":false,"problem":)" + sdk::quote(std::string(value.status().message())) + "}";
    return "<value unavailable>";
  }
  if (json != nullptr) {
    *json = value->json;
    if (v.where == variable_value::state::memory) {
      json->insert(json->size() - 1, R"(,"address":)" + sdk::quote(hex(v.address)));
    }
  }
  return value->text;
}

absl::Status session::cmd_stack(const std::string& name, std::string_view args) {
  // k[n][p]: n numbers the frames, p adds the parameters (P spells them one per line in WinDbg;
  // here the same as p).
  bool numbered = false, parameters = false, arguments = false;
  for (char c : name.substr(1)) {
    if (c == 'n') numbered = true;
    if (c == 'p' || c == 'P') parameters = true;
    if (c == 'b') arguments = true;
  }
  uint64_t max = 0x40;
  if (!trim(args).empty()) {
    auto n = eval(args);
    if (!n.ok() || *n == 0 || *n > 0x400) return usage_error(name, "the frame count must be from 1 to 0x400");
    max = *n;
  }
  auto frames = walk_stack(static_cast<size_t>(max));
  if (!frames.ok()) return frames.status();
  std::string json;
  out_ += stack_text(*frames, numbered, parameters, &json, arguments);
  result_json_ = json;
  return absl::OkStatus();
}

std::string session::stack_text(const std::vector<frame>& frames, bool numbered, bool parameters, std::string* json_out,
                                bool arguments) {
  std::map<uint64_t, std::string> pages;
  const stack_reader memory = stack_memory(pages);
  std::string out = std::string(numbered ? " # " : "") +
                    (arguments ? "Child-SP          RetAddr               : " + kArgsHeader + " : Call Site\n"
                               : "Child-SP          RetAddr               Call Site\n");
  std::string json = R"({"frames":[)";
  for (size_t i = 0; i < frames.size(); ++i) {
    const frame& f = frames[i];
    // Named by the call (pc - 1) for a return address, with the offset of the address itself, as
    // gdb does; a PE image's return address by itself, as WinDbg and RtlVirtualUnwind take it.
    const bool pe_frame = f.mod != nullptr && symbols_.ensure_loaded(*f.mod).symbols.pe_image != nullptr;
    const uint64_t lookup = f.activation || f.signal_trampoline || pe_frame ? f.ip : f.ip - 1;
    std::string site;
    if (f.inlined) {
      site = (f.mod != nullptr ? f.mod->name + "!" : "") + f.function;
    } else {
      site = symbols_.describe(f.ip, lookup);
      if (site.empty()) site = address_text(f.ip);
    }
    std::string params_json;
    if (parameters && !f.signal_trampoline) {
      std::string list;
      params_json = ",\"parameters\":[";
      bool first = true;
      for (const auto& v : frame_variables(frames, i, memory)) {
        if (!v.parameter) continue;
        std::string value_json;
        const std::string value = variable_text(f, v, &value_json);
        const types::type_table* table = f.source->types();
        const std::string type = table != nullptr ? types::c_type_name(*table, v.type) : "";
        list += std::string(first ? "" : ", ") + type + (type.empty() ? "" : " ") + v.name + " = " + value;
        params_json += std::string(first ? "" : ",") + R"({"name":)" + sdk::quote(v.name) + R"(,"type":)" +
                       sdk::quote(type) + R"(,"text":)" + sdk::quote(value) + R"(,"value":)" + value_json + "}";
        first = false;
      }
      params_json += "]";
      // WinDbg puts the list after the function's name, before the offset.
      const size_t bang = site.find('!');
      const size_t plus = site.find('+', bang == std::string::npos ? 0 : bang);
      if (!f.function.empty()) site.insert(plus == std::string::npos ? site.size() : plus, "(" + list + ")");
    }
    if (f.line) site += " " + source_text(*f.line);
    if (f.signal_trampoline) site += " (signal handler called)";
    if (f.how == frame_origin::frame_pointer && !f.inlined && !f.tail_call) {
      site += " (found by frame pointer: no unwind data for the frame below)";
    }
    const std::string columns = f.inlined     ? "(Inline Function) --------`--------"
                                : f.tail_call ? "(Tail Call)       --------`--------"
                                              : address_text(f.sp) + " " + address_text(f.return_address);
    std::string args_text, args_json;
    if (arguments && !f.inlined && !f.tail_call) {
      args_json = R"(,"args":[)";
      for (int a = 0; a < 4; ++a) {
        const auto word = memory(f.sp + 8 + 8 * a, 8);
        args_text += std::string(a ? " " : "") + (word ? address_text(*word) : std::string("????????`????????"));
        args_json += std::string(a ? "," : "") + (word ? sdk::quote(hex(*word)) : "null");
      }
      args_json += "]";
    } else if (arguments) {
      args_text = std::string(kArgsHeader.size(), ' ');
    }
    out += (numbered ? hex_digits(i, 2) + " " : "") + columns + "     " + (arguments ? ": " + args_text + " : " : "") +
           site + "\n";
    json += std::string(i ? "," : "") + R"({"index":)" + std::to_string(i) + R"(,"sp":)" + sdk::quote(hex(f.sp)) +
            R"(,"ip":)" + sdk::quote(hex(f.ip)) + R"(,"return_address":)" + sdk::quote(hex(f.return_address)) +
            R"(,"module":)" + (f.mod != nullptr ? sdk::quote(f.mod->name) : "null") + R"(,"symbol":)" +
            sdk::quote(f.inlined ? site.substr(0, site.find(' ')) : symbols_.describe(f.ip, lookup)) +
            R"(,"function":)" + sdk::quote(f.function) + R"(,"inline":)" + (f.inlined ? "true" : "false") +
            R"(,"tail_call":)" + (f.tail_call ? "true" : "false") + R"(,"unwind":)" + sdk::quote(origin_name(f.how));
    if (f.line)
      json += R"(,"source":{"file":)" + sdk::quote(f.line->file) + R"(,"line":)" + std::to_string(f.line->line) + "}";
    json += R"(,"signal_trampoline":)" + std::string(f.signal_trampoline ? "true" : "false") + params_json + args_json +
            "}";
  }
  if (json_out != nullptr) *json_out = json + "]}";
  return out;
}

}  // namespace toolhost::debugger

namespace toolhost::debugger {

std::optional<register_values> session::selected_frame_registers() {
  if (selected_frame_ == 0) return std::nullopt;
  auto frames = walk_stack(selected_frame_ + 1);
  if (!frames.ok() || frames->size() <= selected_frame_) return std::nullopt;
  const frame& f = (*frames)[selected_frame_];
  register_values values;
  for (int n = 0; n < unwind_registers::kCount; ++n) {
    if (f.regs.value[n]) values[kDwarfNames[n]] = *f.regs.value[n];
  }
  values["rip"] = f.ip;  // an inline or tail-call frame is at its own pc, sharing the registers
  return values;
}

absl::Status session::cmd_frame(const std::string& name, std::string_view args) {
  size_t pos = 0;
  bool show_registers = false;
  skip_blanks(args, pos);
  if (args.substr(pos, 2) == "/r") {
    show_registers = true;
    pos += 2;
  }
  std::optional<size_t> wanted;
  if (!trim(args.substr(pos)).empty()) {
    auto n = eval(args.substr(pos));
    if (!n.ok() || *n > 0x3ff) return usage_error(name, "the frame number is kn's number, from 0 to 0x3ff");
    wanted = static_cast<size_t>(*n);
  }
  const size_t index = wanted.value_or(selected_frame_);
  auto frames = walk_stack(index + 1);
  if (!frames.ok()) return frames.status();
  if (index >= frames->size()) {
    return absl::NotFoundError("the stack has " + std::to_string(frames->size()) + " frames (kn numbers them from 0)");
  }
  selected_frame_ = index;
  std::string json;
  std::vector<frame> one{(*frames)[index]};
  // The frame's line as kn shows it, with its number.
  std::string text = stack_text(one, true, false, &json);
  text = text.substr(text.find('\n') + 1);
  text.replace(0, 2, hex_digits(index, 2));
  out_ += text;
  if (show_registers) {
    if (auto framed = selected_frame_registers()) {
      out_ += register_block(&*framed);
    } else {
      out_ += register_block();
    }
  }
  const size_t frames_at = json.find('[');
  result_json_ = R"({"frame":)" + std::to_string(index) + R"(,"details":)" +
                 json.substr(frames_at + 1, json.size() - frames_at - 3) + "}";
  return absl::OkStatus();
}

absl::Status session::cmd_dv(const std::string& name, std::string_view args) {
  bool with_types = false, with_locations = false, with_kinds = false;
  std::string pattern = "*";
  size_t pos = 0;
  for (;;) {
    skip_blanks(args, pos);
    if (pos >= args.size()) break;
    const std::string word = take_word(args, pos);
    if (word == "/t")
      with_types = true;
    else if (word == "/V" || word == "/v")
      with_locations = true;
    else if (word == "/i")
      with_kinds = true;
    else if (word == "/a" || word == "/n" || word == "/z")
      continue;  // WinDbg's sort and size options: accepted
    else if (!word.empty() && word[0] == '/')
      return usage_error(name, "unknown option " + word + " (dv takes /t, /i and /V)");
    else
      pattern = word;
  }
  // The callers too: values at a function's entry come from their call sites.
  auto frames = walk_stack(selected_frame_ + 0x20);
  if (!frames.ok()) return frames.status();
  if (selected_frame_ >= frames->size()) return absl::NotFoundError("the selected frame is no longer on the stack");
  const frame& f = (*frames)[selected_frame_];
  std::map<uint64_t, std::string> pages;
  const stack_reader memory = stack_memory(pages);
  const auto variables = frame_variables(*frames, selected_frame_, memory);
  if (f.source == nullptr || (variables.empty() && f.function.empty())) {
    return absl::NotFoundError("no debug information describes frame " + std::to_string(selected_frame_) + " (" +
                               (f.mod != nullptr ? symbol_of(f.ip) : address_text(f.ip)) +
                               "): dv needs the module's DWARF (a -g build or its separate debug file)");
  }
  const types::type_table* table = f.source->types();
  size_t width = 14;
  for (const auto& v : variables) width = std::max(width, v.name.size());
  std::string json = R"({"frame":)" + std::to_string(selected_frame_) + R"(,"function":)" + sdk::quote(f.function) +
                     R"(,"variables":[)";
  bool first = true;
  size_t shown = 0;
  for (const auto& v : variables) {
    if (!wildcard_match(pattern, v.name)) continue;
    std::string value_json;
    const std::string value = variable_text(f, v, &value_json);
    const std::string type = table != nullptr ? types::c_type_name(*table, v.type) : "";
    std::string line;
    if (with_locations) {
      line += (v.where == variable_value::state::memory  ? address_text(v.address)
               : v.where == variable_value::state::bytes ? std::string("(in registers)   ")
                                                         : std::string("(unavailable)    ")) +
              " ";
    }
    if (with_kinds) line += v.parameter ? "prm  " : "loc  ";
    std::string label = with_types ? type + " " + v.name : v.name;
    if (label.size() < width) label.insert(0, width - label.size(), ' ');
    out_ += line + label + " = " + value + "\n";
    json += std::string(first ? "" : ",") + R"({"name":)" + sdk::quote(v.name) + R"(,"parameter":)" +
            (v.parameter ? "true" : "false") + R"(,"type":)" + sdk::quote(type) + R"(,"text":)" + sdk::quote(value) +
            R"(,"value":)" + value_json + "}";
    first = false;
    ++shown;
  }
  if (shown == 0)
    out_ += pattern == "*" ? "(the frame has no parameters or locals in scope)\n"
                           : "No variable matches " + pattern + ".\n";
  result_json_ = json + "]}";
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
