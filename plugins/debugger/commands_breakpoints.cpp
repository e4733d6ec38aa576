// Breakpoints: bp, ba, bl, bc, bd, be.
#include <algorithm>

#include <toolhost/sdk/json.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

const char* type_name(toolhost_dt_breakpoint_type_t type) {
  switch (type) {
    case TOOLHOST_DT_BP_SOFTWARE: return "software";
    case TOOLHOST_DT_BP_HARDWARE: return "execute";
    case TOOLHOST_DT_BP_WRITE: return "write";
    case TOOLHOST_DT_BP_READ: return "read";
    default: return "access";
  }
}

}  // namespace

absl::Status session::cmd_bp(const std::string& name, std::string_view args) {
  if (!target_->has(TOOLHOST_DT_CAP_SW_BREAKPOINTS)) {
    return absl::UnimplementedError("the " + target_->backend() + " backend cannot set breakpoints");
  }
  breakpoint b;
  size_t pos = 0;
  // Options: /1 (one shot), /w "condition", /p <eprocess|pid>, /t <ethread>.
  for (;;) {
    skip_blanks(args, pos);
    if (pos >= args.size() || args[pos] != '/') break;
    const std::string option = take_word(args, pos);
    if (option == "/1") {
      b.one_shot = true;
    } else if (option == "/p" || option == "/t") {
      if (auto s = need_windows(name + " " + option); !s.ok()) return s;
      const std::string what = take_word(args, pos);
      if (what.empty()) return usage_error(name, option + " needs " + (option == "/p" ? "an EPROCESS" : "an ETHREAD"));
      if (option == "/p") {
        auto p = find_process(what);
        if (!p.ok()) return usage_error(name, std::string(p.status().message()));
        b.process = p->eprocess;
      } else {
        auto v = eval(what);
        if (!v.ok()) return usage_error(name, std::string(v.status().message()));
        auto t = windows_->thread_at(*v);
        if (!t.ok()) return usage_error(name, std::string(t.status().message()));
        b.thread = t->ethread;
      }
    } else if (option == "/w") {
      auto q = take_quoted(args, pos);
      if (!q) return usage_error(name, "/w takes a quoted condition, e.g. /w \"rdi == 5\"");
      b.condition = *q;
    } else {
      return usage_error(name, "unknown option " + option);
    }
  }
  skip_blanks(args, pos);
  if (pos >= args.size()) return usage_error(name, name + " needs an address or symbol");
  const size_t expression_start = pos;
  auto address = eval_prefix(args, pos);
  if (!address.ok()) {
    // bu: a symbol not known yet (its module not loaded) makes a deferred breakpoint.
    size_t word_end = expression_start;
    const std::string word = take_word(args, word_end);
    if (name != "bu" || !absl::IsNotFound(evaluate(word, *this).status())) {
      return usage_error(name, std::string(address.status().message()));
    }
    pos = expression_start + word.size();
    b.resolved = false;
  } else {
    b.address = *address;
  }
  b.deferred = name == "bu";
  b.expression = std::string(trim(args.substr(expression_start, pos - expression_start)));
  // A pass count, then "if <condition>" or a quoted condition.
  if (pos < args.size() && args[pos] != '"' && !(args.substr(pos).starts_with("if ") || args.substr(pos) == "if")) {
    auto passes = eval_prefix(args, pos);
    if (!passes.ok() || *passes == 0) return usage_error(name, "the pass count must be a number of at least 1");
    b.passes = b.passes_left = *passes;
  }
  if (args.substr(pos).starts_with("if")) {
    b.condition = std::string(trim(args.substr(pos + 2)));
    if (b.condition.empty()) return usage_error(name, "'if' needs a condition");
    pos = args.size();
  } else if (pos < args.size() && args[pos] == '"') {
    auto q = take_quoted(args, pos);
    if (!q) return usage_error(name, "unterminated quoted condition");
    b.condition = *q;
  }
  if (pos < args.size()) return usage_error(name, "unexpected '" + std::string(args.substr(pos)) + "'");
  // The same place again redefines the breakpoint, as WinDbg does.
  for (auto& existing : breakpoints_) {
    if (existing.type == TOOLHOST_DT_BP_SOFTWARE && b.resolved && existing.resolved && existing.address == b.address) {
      b.id = existing.id;
      if (!existing.enabled) {
        if (auto s = arm(b); !s.ok()) return s;
      }
      existing = b;
      out_ += "breakpoint " + std::to_string(b.id) + " redefined\n";
      return absl::OkStatus();
    }
  }
  if (auto s = arm(b); !s.ok()) return s;
  b.id = next_breakpoint_id_++;
  if (!b.resolved) {
    out_ += "Breakpoint " + std::to_string(b.id) + " is deferred: '" + b.expression +
            "' is not known yet; it is set when its module loads.\n";
  }
  breakpoints_.push_back(b);
  return absl::OkStatus();
}

absl::Status session::cmd_ba(const std::string& name, std::string_view args) {
  size_t pos = 0;
  const std::string access = take_word(args, pos);
  if (access.size() != 2) return usage_error(name, "the access is e, r or w followed by the size 1, 2, 4 or 8");
  breakpoint b;
  switch (access[0]) {
    case 'e': b.type = TOOLHOST_DT_BP_HARDWARE; break;
    case 'w': b.type = TOOLHOST_DT_BP_WRITE; break;
    case 'r': b.type = TOOLHOST_DT_BP_ACCESS; break;  // WinDbg's r is read or write
    default: return usage_error(name, std::string("'") + access[0] + "' is not an access (e, r or w)");
  }
  b.length = static_cast<uint32_t>(access[1] - '0');
  if (b.length != 1 && b.length != 2 && b.length != 4 && b.length != 8) {
    return usage_error(name, "the size must be 1, 2, 4 or 8");
  }
  if (b.type == TOOLHOST_DT_BP_HARDWARE && b.length != 1)
    return usage_error(name, "an execution breakpoint has size 1 (e1)");
  const uint64_t needed =
      b.type == TOOLHOST_DT_BP_HARDWARE ? TOOLHOST_DT_CAP_HW_BREAKPOINTS : TOOLHOST_DT_CAP_WATCHPOINTS;
  if (!target_->has(needed)) {
    return absl::UnimplementedError("the " + target_->backend() + " backend has no " +
                                    (b.type == TOOLHOST_DT_BP_HARDWARE ? "hardware breakpoints" : "data breakpoints"));
  }
  skip_blanks(args, pos);
  if (pos >= args.size()) return usage_error(name, "ba needs an address");
  const size_t expression_start = pos;
  auto address = eval_prefix(args, pos);
  if (!address.ok()) return usage_error(name, std::string(address.status().message()));
  if (b.length > 1 && *address % b.length != 0) {
    return usage_error(name, "a " + std::to_string(b.length) + "-byte data breakpoint needs an address aligned to " +
                                 std::to_string(b.length));
  }
  b.address = *address;
  b.expression = std::string(trim(args.substr(expression_start, pos - expression_start)));
  if (pos < args.size()) {
    auto passes = eval_prefix(args, pos);
    if (!passes.ok() || *passes == 0) return usage_error(name, "the pass count must be a number of at least 1");
    b.passes = b.passes_left = *passes;
  }
  if (auto s = arm(b); !s.ok()) return s;
  b.id = next_breakpoint_id_++;
  breakpoints_.push_back(b);
  return absl::OkStatus();
}

absl::Status session::cmd_bl(const std::string& name, std::string_view args) {
  if (!trim(args).empty()) return usage_error(name, "bl takes no arguments");
  std::string list = "[";
  for (const auto& b : breakpoints_) {
    std::string line = " " + std::to_string(b.id) + " " + (b.enabled ? "e" : "d") + (b.resolved ? "" : "u") + " " +
                       (b.resolved ? address_text(b.address) : std::string(17, ' '));
    if (b.type != TOOLHOST_DT_BP_SOFTWARE) {
      const char access = b.type == TOOLHOST_DT_BP_HARDWARE ? 'e' : b.type == TOOLHOST_DT_BP_WRITE ? 'w' : 'r';
      line += std::string(" ") + access + " " + std::to_string(b.length);
    }
    line += "     " + hex_digits(b.passes_left, 4) + " (" + hex_digits(b.passes, 4) + ")";
    const std::string sym = symbol_of(b.address);
    line += "  " + (sym.empty() ? b.expression : sym);
    if (b.one_shot) line += " /1";
    if (!b.condition.empty()) line += " if " + b.condition;
    if (b.process != 0) line += " /p " + address_text(b.process);
    if (b.thread != 0) line += " /t " + address_text(b.thread);
    out_ += line + "\n";
    if (list.size() > 1) list += ',';
    list += R"({"id":)" + std::to_string(b.id) + R"(,"enabled":)" + (b.enabled ? "true" : "false") + R"(,"type":")" +
            type_name(b.type) + R"(","address":)" + sdk::quote(hex(b.address)) + R"(,"length":)" +
            std::to_string(b.length) + R"(,"symbol":)" + sdk::quote(sym) + R"(,"passes":)" + std::to_string(b.passes) +
            R"(,"passes_left":)" + std::to_string(b.passes_left) + R"(,"hits":)" + std::to_string(b.hits) +
            R"(,"condition":)" + (b.condition.empty() ? "null" : sdk::quote(b.condition)) + R"(,"one_shot":)" +
            (b.one_shot ? "true" : "false") + R"(,"deferred":)" + (b.deferred ? "true" : "false") + R"(,"resolved":)" +
            (b.resolved ? "true" : "false") + R"(,"expression":)" + sdk::quote(b.expression) + R"(,"process":)" +
            (b.process != 0 ? sdk::quote(hex(b.process)) : "null") + R"(,"thread":)" +
            (b.thread != 0 ? sdk::quote(hex(b.thread)) : "null") + R"(,"foreign_hits":)" +
            std::to_string(b.foreign_hits) + "}";
  }
  if (breakpoints_.empty()) out_ += "No breakpoints.\n";
  result_json_ = R"({"breakpoints":)" + list + "]}";
  return absl::OkStatus();
}

absl::Status session::cmd_bc_bd_be(const std::string& name, std::string_view args) {
  std::string problem;
  auto ids = parse_id_list(std::string(args), breakpoints_, problem);
  if (!ids) return usage_error(name, problem);
  for (int id : *ids) {
    auto it = std::find_if(breakpoints_.begin(), breakpoints_.end(), [&](const breakpoint& b) { return b.id == id; });
    if (it == breakpoints_.end()) continue;
    if (name == "be") {
      if (!it->enabled) {
        if (auto s = arm(*it); !s.ok()) return s;
        it->enabled = true;
      }
      continue;
    }
    if (it->enabled) {
      it->enabled = false;
      if (auto s = disarm(*it); !s.ok()) {
        it->enabled = true;
        return s;
      }
    }
    if (name == "bc") breakpoints_.erase(it);
  }
  if (breakpoints_.empty() && name == "bc") next_breakpoint_id_ = 0;
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
