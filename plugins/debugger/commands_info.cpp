// Registers, expressions, threads and help.
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
    // After .frame N: that frame's registers, as its callees' unwind data restores them.
    const auto framed = selected_frame_registers();
    if (framed) {
      out_ += "Frame " + hex_digits(selected_frame_, 2) + ": registers the unwind data does not restore show as ?\n";
      out_ += register_block(&*framed);
      if (auto it = framed->find("rip"); it != framed->end()) out_ += instruction_line(it->second, true);
    } else {
      out_ += register_block();
      if (auto at = pc(); at.ok()) out_ += instruction_line(*at, true);
    }
    const register_values& shown = framed ? *framed : **r;
    std::string json = R"({"registers":{)";
    bool first = true;
    for (const auto& reg : target_->registers()) {
      auto it = shown.find(reg.name);
      if (it == shown.end()) continue;
      json += std::string(first ? "" : ",") + sdk::quote(reg.name) + ":" + sdk::quote(hex(it->second));
      first = false;
    }
    result_json_ = json + "}" + (framed ? R"(,"frame":)" + std::to_string(selected_frame_) : "") + "}";
    return absl::OkStatus();
  }
  // "r rax", "r rax=expr", "r rax, rbx"
  std::string json = R"({"registers":{)";
  bool first = true;
  std::string rest(args);
  size_t start = 0;
  while (start < rest.size()) {
    size_t comma = rest.find(',', start);
    const std::string_view item =
        trim(std::string_view(rest).substr(start, comma == std::string::npos ? std::string::npos : comma - start));
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
      selected_frame_ = 0;
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

absl::Status session::cmd_evaluate(const std::string& name, std::string_view args) {
  if (trim(args).empty()) return usage_error(name, "? needs an expression");
  auto v = eval(args);
  if (!v.ok()) return v.status();
  out_ += "Evaluate expression: " + std::to_string(static_cast<int64_t>(*v)) + " = " + address_text(*v) + "\n";
  result_json_ = R"({"value":)" + sdk::quote(hex(*v)) + R"(,"decimal":)" +
                 sdk::quote(std::to_string(static_cast<int64_t>(*v))) + "}";
  return absl::OkStatus();
}

absl::Status session::cmd_threads(const std::string& name, std::string_view args) {
  args = trim(args);
  if (windows_ && args.empty() && !target_->has(TOOLHOST_DT_CAP_RUN_CONTROL)) {
    // A VM's RAM: no vCPUs to select, the processors' current threads read live.
    list_processors();
    return absl::OkStatus();
  }
  if (running()) return absl::FailedPreconditionError("the target is running; threads are listed while it is halted");
  refresh_threads();
  if (threads_.empty())
    return absl::UnimplementedError("the " + target_->backend() + " backend lists no threads or vCPUs");
  if (!args.empty()) {
    // "~Ns": make thread/vCPU N (its position in the list) current.
    if (args.back() != 's') return usage_error(name, "'~" + std::string(args) + "' is not ~ or ~<n>s");
    auto index = parse_number(args.substr(0, args.size() - 1));
    if (!index) return usage_error(name, "'" + std::string(args.substr(0, args.size() - 1)) + "' is not a number");
    if (*index >= threads_.size()) {
      if (windows_ && *index < windows_processors()) {
        return absl::NotFoundError("processor " + std::to_string(*index) + " has no register context from the " +
                                   target_->backend() + " backend; ~ shows its current thread only");
      }
      return absl::NotFoundError("there is no thread " + std::to_string(*index) + "; ~ lists " +
                                 std::to_string(threads_.size()));
    }
    if (auto s = target_->select_thread(threads_[*index].id); !s.ok()) return s;
    registers_.reset();
    selected_frame_ = 0;
    threads_.clear();
    refresh_threads();
    if (auto at = pc(); at.ok()) out_ += instruction_line(*at, true);
    return absl::OkStatus();
  }
  if (windows_) {
    list_processors();
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
