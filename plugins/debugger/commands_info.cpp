// Registers, stack, modules, symbols, expressions, threads and help.
#include <algorithm>
#include <cctype>

#include <toolhost/sdk/json.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

absl::Status session::cmd_registers(const std::string& name, std::string_view args) {
  auto r = regs();
  if (!r.ok()) return r.status();
  args = trim(args);
  if (args.empty()) {
    out_ += register_block();
    if (auto at = pc(); at.ok()) out_ += instruction_line(*at, true);
    std::string json = R"({"registers":{)";
    bool first = true;
    for (const auto& reg : target_->registers()) {
      auto it = (*r)->find(reg.name);
      if (it == (*r)->end()) continue;
      json += std::string(first ? "" : ",") + sdk::quote(reg.name) + ":" + sdk::quote(hex(it->second));
      first = false;
    }
    result_json_ = json + "}}";
    return absl::OkStatus();
  }
  // "r rax", "r rax=expr", "r rax, rbx"
  std::string json = R"({"registers":{)";
  bool first = true;
  std::string rest(args);
  size_t start = 0;
  while (start < rest.size()) {
    size_t comma = rest.find(',', start);
    const std::string_view item = trim(std::string_view(rest).substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    start = comma == std::string::npos ? rest.size() : comma + 1;
    const size_t eq = item.find('=');
    std::string reg_name(trim(item.substr(0, eq)));
    if (!reg_name.empty() && reg_name[0] == '@') reg_name.erase(0, 1);
    for (char& c : reg_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const register_desc* reg = target_->find_register(reg_name);
    if (reg == nullptr) return usage_error(name, "there is no register '" + reg_name + "'");
    if (eq != std::string_view::npos) {
      if (!target_->has(TOOLHOST_DT_CAP_WRITE_REGISTERS)) {
        return absl::UnimplementedError("the " + target_->backend() + " backend cannot write registers");
      }
      auto value = eval(item.substr(eq + 1));
      if (!value.ok()) return usage_error(name, std::string(value.status().message()));
      if (auto s = target_->write_register(*reg, *value); !s.ok()) return s;
      registers_.reset();
      continue;
    }
    auto v = register_value(reg_name);
    if (!v) return absl::NotFoundError(reg_name + " is not readable");
    out_ += reg_name + "=" + hex_digits(*v, static_cast<int>(std::min<uint32_t>(reg->bits, 64) / 4)) + "\n";
    json += std::string(first ? "" : ",") + sdk::quote(reg_name) + ":" + sdk::quote(hex(*v));
    first = false;
  }
  result_json_ = json + "}}";
  return absl::OkStatus();
}

absl::StatusOr<std::vector<session::frame>> session::walk_stack(size_t max_frames) {
  auto ip = pc();
  if (!ip.ok()) return ip.status();
  auto stack = sp();
  if (!stack.ok()) return stack.status();
  const auto* fp_reg = target_->register_with_role("fp");
  uint64_t fp = fp_reg != nullptr ? register_value(fp_reg->name).value_or(0) : 0;
  refresh_modules();
  std::vector<frame> frames;
  // Frame 0: where in its prologue the function is decides where its return address is.
  // At the entry (or at a ret) it is at [sp]; after `push rbp` at [sp+8]; after `mov rbp, rsp`
  // the frame-pointer chain holds it at [rbp+8].
  uint64_t ret = 0, caller_sp = 0, caller_fp = fp;
  bool via_chain = true;
  auto insn_bytes = target_->read(*ip, 16);
  std::optional<disasm::instruction> current;
  if (insn_bytes.ok()) {
    if (auto i = decoder_.decode(*ip, *insn_bytes); i.ok()) current = *i;
  }
  auto fn = symbols_.function_at(*ip);
  if (current && current->is_ret()) {
    via_chain = false;
    auto r = read_memory(*stack, 8);
    if (!r.ok()) return r.status();
    ret = *r;
    caller_sp = *stack + 8;
  } else if (fn) {
    // Decode the prologue: [endbr64] push rbp; mov rbp, rsp.
    auto prologue = target_->read(fn->first, 16);
    if (prologue.ok()) {
      auto list = decoder_.decode_all(fn->first, std::span(reinterpret_cast<const uint8_t*>(prologue->data()), prologue->size()), 3);
      uint64_t push_at = 0, mov_at = 0, body_at = 0;
      for (size_t i = 0; i < list.size(); ++i) {
        if (list[i].text == "push rbp") push_at = list[i].address;
        if (list[i].text == "mov rbp, rsp") {
          mov_at = list[i].address;
          body_at = list[i].address + list[i].length;
        }
      }
      if (push_at != 0 && mov_at != 0) {
        if (*ip <= push_at) {
          via_chain = false;
          auto r = read_memory(*stack, 8);
          if (!r.ok()) return r.status();
          ret = *r;
          caller_sp = *stack + 8;
        } else if (*ip < body_at) {
          via_chain = false;
          auto r = read_memory(*stack + 8, 8);
          if (!r.ok()) return r.status();
          ret = *r;
          auto saved = read_memory(*stack, 8);
          caller_fp = saved.ok() ? *saved : 0;
          caller_sp = *stack + 16;
        }
      }
    }
  }
  if (via_chain) {
    if (fp == 0) {
      frames.push_back({*ip, *stack, 0});
      return frames;
    }
    auto r = read_memory(fp + 8, 8);
    auto saved = read_memory(fp, 8);
    ret = r.ok() ? *r : 0;
    caller_fp = saved.ok() ? *saved : 0;
    caller_sp = fp + 16;
  }
  frames.push_back({*ip, *stack, ret});
  uint64_t frame_sp = caller_sp, frame_fp = caller_fp, frame_ip = ret;
  while (frames.size() < max_frames && frame_ip != 0 && symbols_.module_at(frame_ip) != nullptr) {
    uint64_t next_ret = 0, next_fp = 0;
    // The chain continues only through frames that keep rbp as a frame pointer (above us).
    if (frame_fp > frame_sp - 16 && frame_fp - frame_sp < (1u << 20)) {
      auto r = read_memory(frame_fp + 8, 8);
      auto saved = read_memory(frame_fp, 8);
      if (r.ok() && saved.ok()) {
        next_ret = *r;
        next_fp = *saved;
      }
    }
    frames.push_back({frame_ip, frame_sp, next_ret});
    if (next_ret == 0) break;
    frame_sp = frame_fp + 16;
    if (next_fp <= frame_fp) {
      frame_ip = next_ret;
      frame_fp = 0;
      if (frames.size() < max_frames && symbols_.module_at(frame_ip) != nullptr) frames.push_back({frame_ip, frame_sp, 0});
      break;
    }
    frame_fp = next_fp;
    frame_ip = next_ret;
  }
  return frames;
}

absl::Status session::cmd_stack(const std::string& name, std::string_view args) {
  uint64_t max = 20;
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
  for (size_t i = 0; i < frames->size(); ++i) {
    const auto& f = (*frames)[i];
    std::string sym = symbol_of(f.ip);
    if (sym.empty()) sym = address_text(f.ip);
    out_ += (numbered ? hex_digits(i, 2) + " " : "") + address_text(f.sp) + " " + address_text(f.return_address) +
            "     " + sym + "\n";
    if (i > 0) json += ',';
    json += R"({"index":)" + std::to_string(i) + R"(,"sp":)" + sdk::quote(hex(f.sp)) + R"(,"ip":)" + sdk::quote(hex(f.ip)) +
            R"(,"return_address":)" + sdk::quote(hex(f.return_address)) + R"(,"symbol":)" + sdk::quote(symbol_of(f.ip)) + "}";
  }
  result_json_ = json + "]}";
  return absl::OkStatus();
}

absl::Status session::cmd_evaluate(const std::string& name, std::string_view args) {
  if (trim(args).empty()) return usage_error(name, "? needs an expression");
  auto v = eval(args);
  if (!v.ok()) return v.status();
  out_ += "Evaluate expression: " + std::to_string(static_cast<int64_t>(*v)) + " = " + address_text(*v) + "\n";
  result_json_ = R"({"value":)" + sdk::quote(hex(*v)) + R"(,"decimal":)" + sdk::quote(std::to_string(static_cast<int64_t>(*v))) + "}";
  return absl::OkStatus();
}

absl::Status session::cmd_threads(const std::string& name, std::string_view args) {
  args = trim(args);
  if (running()) return absl::FailedPreconditionError("the target is running; threads are listed while it is halted");
  refresh_threads();
  if (threads_.empty()) return absl::UnimplementedError("the " + target_->backend() + " backend lists no threads or vCPUs");
  if (!args.empty()) {
    // "~Ns": make thread/vCPU N (its position in the list) current.
    if (args.back() != 's') return usage_error(name, "'~" + std::string(args) + "' is not ~ or ~<n>s");
    auto index = parse_number(args.substr(0, args.size() - 1));
    if (!index) return usage_error(name, "'" + std::string(args.substr(0, args.size() - 1)) + "' is not a number");
    if (*index >= threads_.size()) {
      return absl::NotFoundError("there is no thread " + std::to_string(*index) + "; ~ lists " +
                                 std::to_string(threads_.size()));
    }
    if (auto s = target_->select_thread(threads_[*index].id); !s.ok()) return s;
    registers_.reset();
    threads_.clear();
    refresh_threads();
    if (auto at = pc(); at.ok()) out_ += instruction_line(*at, true);
    return absl::OkStatus();
  }
  std::string json = R"({"threads":[)";
  for (size_t i = 0; i < threads_.size(); ++i) {
    const auto& t = threads_[i];
    out_ += std::string(t.current ? "." : " ") + std::to_string(i) + "  Id: " + hex(t.id).substr(2) +
            (t.name.empty() ? "" : "  " + t.name) + "\n";
    json += std::string(i ? "," : "") + R"({"index":)" + std::to_string(i) + R"(,"id":)" + std::to_string(t.id) +
            R"(,"name":)" + sdk::quote(t.name) + R"(,"current":)" + (t.current ? "true" : "false") + "}";
  }
  result_json_ = json + "]}";
  return absl::OkStatus();
}

absl::Status session::cmd_help(const std::string&, std::string_view args) {
  auto text = render_help(args);
  if (!text.ok()) return text.status();
  out_ += *text;
  if (trim(args).empty()) out_ += "Backend: " + target_->backend() + " (" + target_->kind() + ")\n";
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
