#include "target_description.hpp"

#include <algorithm>
#include <charconv>

namespace toolhost::gdb {

namespace {

std::string role_of(std::string_view name) {
  if (name == "rip" || name == "pc" || name == "eip") return "pc";
  if (name == "rsp" || name == "sp" || name == "esp") return "sp";
  if (name == "rbp" || name == "ebp" || name == "fp") return "fp";
  if (name == "eflags" || name == "rflags" || name == "cpsr") return "flags";
  if (name == "cr3") return "cr3";
  return "";
}

uint32_t to_u32(std::string_view text, uint32_t fallback) {
  uint32_t v = fallback;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() ? v : fallback;
}

struct parse_state {
  const annex_reader& read;
  target_description out;
  uint32_t next_regnum = 0;
};

absl::Status parse(parse_state& st, std::string_view annex, int depth) {
  if (depth > 8) return absl::InvalidArgumentError("target description includes nest too deeply");
  auto text = st.read(annex);
  if (!text.ok()) return text.status();
  // Comments go first: QEMU's descriptions comment out registers its 'g' block lacks.
  std::string uncommented;
  for (size_t at = 0; at < text->size();) {
    const size_t open = text->find("<!--", at);
    if (open == std::string::npos) {
      uncommented.append(*text, at, std::string::npos);
      break;
    }
    uncommented.append(*text, at, open - at);
    const size_t close = text->find("-->", open + 4);
    if (close == std::string::npos) break;
    at = close + 3;
  }
  std::string_view xml = uncommented;
  size_t pos = 0;
  while ((pos = xml.find('<', pos)) != std::string_view::npos) {
    const size_t end = xml.find('>', pos);
    if (end == std::string_view::npos) break;
    std::string_view tag = xml.substr(pos, end - pos + 1);
    if (tag.starts_with("<architecture>") || tag == "<architecture>") {
      const size_t close = xml.find("</architecture>", end);
      if (close != std::string_view::npos) st.out.architecture = std::string(xml.substr(end + 1, close - end - 1));
    } else if (tag.starts_with("<xi:include")) {
      const std::string href = xml_attribute(tag, "href");
      if (!href.empty()) {
        if (auto s = parse(st, href, depth + 1); !s.ok()) return s;
      }
    } else if (tag.starts_with("<reg ") || tag.starts_with("<reg\t")) {
      register_info r;
      r.name = xml_attribute(tag, "name");
      r.bits = to_u32(xml_attribute(tag, "bitsize"), 0);
      const std::string regnum = xml_attribute(tag, "regnum");
      r.regnum = regnum.empty() ? st.next_regnum : to_u32(regnum, st.next_regnum);
      st.next_regnum = r.regnum + 1;
      r.type = xml_attribute(tag, "type");
      r.role = role_of(r.name);
      if (!r.name.empty() && r.bits > 0) st.out.registers.push_back(std::move(r));
    }
    pos = end + 1;
  }
  return absl::OkStatus();
}

}  // namespace

uint32_t target_description::total_bytes() const {
  uint32_t total = 0;
  for (const auto& r : registers) total = std::max(total, r.offset + r.bits / 8);
  return total;
}

std::string xml_attribute(std::string_view tag, std::string_view name) {
  size_t pos = 0;
  while ((pos = tag.find(name, pos)) != std::string_view::npos) {
    const bool starts = pos > 0 && (tag[pos - 1] == ' ' || tag[pos - 1] == '\t' || tag[pos - 1] == '\n');
    const size_t eq = pos + name.size();
    if (starts && eq + 1 < tag.size() && tag[eq] == '=' && (tag[eq + 1] == '"' || tag[eq + 1] == '\'')) {
      const char quote = tag[eq + 1];
      const size_t close = tag.find(quote, eq + 2);
      if (close == std::string_view::npos) return "";
      return std::string(tag.substr(eq + 2, close - eq - 2));
    }
    pos = eq;
  }
  return "";
}

absl::StatusOr<target_description> read_target_description(const annex_reader& read, std::string_view annex) {
  parse_state st{read, {}, 0};
  if (auto s = parse(st, annex, 0); !s.ok()) return s;
  auto& regs = st.out.registers;
  std::stable_sort(regs.begin(), regs.end(), [](const auto& a, const auto& b) { return a.regnum < b.regnum; });
  uint32_t offset = 0;
  for (auto& r : regs) {
    r.offset = offset;
    offset += (r.bits + 7) / 8;
  }
  if (regs.empty()) return absl::InvalidArgumentError("the target description names no registers");
  return std::move(st.out);
}

}  // namespace toolhost::gdb
