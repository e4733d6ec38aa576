// Memory: d* display, e* edit, s search, u/ub/uf disassembly.
#include <algorithm>
#include <cctype>
#include <cstring>

#include <toolhost/sdk/json.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

constexpr uint64_t kMaxRangeBytes = 16u << 20;

size_t unit_of(const std::string& name) {
  switch (name.size() > 1 ? name[1] : 'b') {
    case 'w': return 2;
    case 'd': return 4;
    case 'c': return 4;
    case 'q': return 8;
    case 'p': return 8;
    case 'u': return 2;
    default: return 1;
  }
}

uint64_t little_endian(const std::string& bytes, size_t offset, size_t size) {
  uint64_t v = 0;
  std::memcpy(&v, bytes.data() + offset, size);
  return v;
}

std::string printable(const std::string& bytes, size_t offset, size_t size) {
  std::string out;
  for (size_t i = offset; i < offset + size; ++i) {
    if (i >= bytes.size()) {
      out += ' ';
      continue;
    }
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    out += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
  }
  return out;
}

std::string byte_line(uint64_t address, const std::string& bytes, size_t offset, size_t total) {
  std::string line = address_text(address) + "  ";
  for (size_t i = 0; i < 16; ++i) {
    const size_t at = offset + i;
    if (at >= total) {
      line += "   ";
      continue;
    }
    line += at < bytes.size() ? hex_digits(static_cast<uint8_t>(bytes[at]), 2) : "??";
    line += (i == 7 && at + 1 < total) ? '-' : ' ';
  }
  return line + " " + printable(bytes, offset, std::min<size_t>(16, total - offset));
}

}  // namespace

absl::Status session::parse_range(const std::string& name, std::string_view args, size_t& pos, size_t unit,
                                  uint64_t default_count, uint64_t& start, uint64_t& count,
                                  std::optional<uint64_t> default_start) {
  skip_blanks(args, pos);
  count = default_count;
  if (pos >= args.size()) {
    if (!default_start) return usage_error(name, "an address is needed");
    start = *default_start;
    return absl::OkStatus();
  }
  auto s = eval_prefix(args, pos);
  if (!s.ok()) return usage_error(name, std::string(s.status().message()));
  start = *s;
  skip_blanks(args, pos);
  if (pos < args.size() && (args[pos] == 'L' || args[pos] == 'l') && pos + 1 < args.size() &&
      (std::isxdigit(static_cast<unsigned char>(args[pos + 1])) || args[pos + 1] == '?' || args[pos + 1] == '0')) {
    pos += args[pos + 1] == '?' ? 2 : 1;
    auto c = eval_prefix(args, pos);
    if (!c.ok()) return usage_error(name, std::string(c.status().message()));
    count = *c;
  } else if (pos < args.size() && (name[0] == 'd' || name[0] == '!')) {
    // "start end": the end address is included.
    auto e = eval_prefix(args, pos);
    if (!e.ok()) return usage_error(name, std::string(e.status().message()));
    if (*e < start) return usage_error(name, "the end address is below the start");
    count = (*e - start) / unit + 1;
  }
  if (count == 0) return usage_error(name, "the length must be at least 1");
  if (count > kMaxRangeBytes / unit) {
    return usage_error(name, "the range is larger than " + hex(kMaxRangeBytes) + " bytes; use a smaller L count");
  }
  return absl::OkStatus();
}

absl::Status session::cmd_display(const std::string& name, std::string_view args) {
  // "!db": the same display of physical memory.
  const bool physical = name[0] == '!';
  const std::string base = physical ? name.substr(1) : name;
  const toolhost_dt_space_t space = physical ? TOOLHOST_DT_PHYSICAL : TOOLHOST_DT_VIRTUAL;
  if (!target_->has(physical ? TOOLHOST_DT_CAP_READ_PHYSICAL : TOOLHOST_DT_CAP_READ_VIRTUAL)) {
    return absl::UnimplementedError("the " + target_->backend() + " backend cannot read " +
                                    (physical ? "physical" : "virtual") + " memory");
  }
  const bool symbolized = base.size() == 3 && base.back() == 's';  // dds, dqs, dps
  const size_t unit = symbolized ? (base[1] == 'd' ? 4 : 8) : unit_of(base);
  const bool strings = base == "da" || base == "du";
  const uint64_t default_count = symbolized ? 16 : strings ? 0x100 / unit : (unit == 1 ? 0x80 : 0x80 / unit);
  uint64_t start = 0, count = 0;
  size_t pos = 0;
  if (auto s = parse_range(name, args, pos, unit, default_count, start, count,
                           next_display_ != 0 && !physical ? std::optional<uint64_t>(next_display_) : std::nullopt);
      !s.ok()) {
    return s;
  }
  if (pos < args.size()) return usage_error(name, "unexpected '" + std::string(args.substr(pos)) + "'");
  const size_t total = count * unit;
  auto data = target_->read(start, total, space);
  if (!data.ok()) {
    return absl::NotFoundError("Memory access error at " + address_text(start) + ": " +
                               std::string(data.status().message()));
  }
  const std::string& bytes = *data;
  if (!physical) next_display_ = start + total;
  if (strings) {
    std::string text;
    size_t i = 0;
    for (; i + unit <= bytes.size(); i += unit) {
      const uint64_t c = little_endian(bytes, i, unit);
      if (c == 0) break;
      text += (c >= 0x20 && c < 0x7f) ? static_cast<char>(c) : '.';
    }
    out_ += address_text(start) + "  \"" + text + "\"\n";
    result_json_ = R"({"address":)" + sdk::quote(hex(start)) + R"(,"string":)" + sdk::quote(text) + "}";
    return absl::OkStatus();
  }
  std::string values = "[";
  for (size_t i = 0; i + unit <= bytes.size(); i += unit) {
    if (values.size() > 1) values += ',';
    values += sdk::quote(hex(little_endian(bytes, i, unit)));
  }
  values += "]";
  result_json_ =
      R"({"address":)" + sdk::quote(hex(start)) + R"(,"unit":)" + std::to_string(unit) + R"(,"values":)" + values + "}";
  if (symbolized) {
    // WinDbg's dqs: "address  value module!symbol+0x10", one value a line.
    for (size_t i = 0; i + unit <= bytes.size(); i += unit) {
      const uint64_t v = little_endian(bytes, i, unit);
      const std::string sym = symbol_of(v);
      out_ += address_text(start + i) + "  " + (unit == 8 ? address_text(v) : hex_digits(v, 8)) +
              (sym.empty() ? "" : " " + sym) + "\n";
    }
    if (bytes.size() < total) out_ += "(memory from " + address_text(start + bytes.size()) + " on is not readable)\n";
    return absl::OkStatus();
  }
  for (size_t offset = 0; offset < total; offset += 16) {
    const uint64_t address = start + offset;
    if (unit == 1) {
      out_ += byte_line(address, bytes, offset, total) + "\n";
      continue;
    }
    std::string line = address_text(address) + " ";
    for (size_t i = offset; i < std::min<size_t>(offset + 16, total); i += unit) {
      line += ' ';
      if (i + unit > bytes.size()) {
        line += std::string(unit == 8 ? 17 : unit * 2, '?');
        continue;
      }
      const uint64_t v = little_endian(bytes, i, unit);
      line += unit == 8 ? address_text(v) : hex_digits(v, static_cast<int>(unit * 2));
    }
    if (base == "dc") line += "  " + printable(bytes, offset, std::min<size_t>(16, total - offset));
    out_ += line + "\n";
  }
  if (bytes.size() < total) out_ += "(memory from " + address_text(start + bytes.size()) + " on is not readable)\n";
  return absl::OkStatus();
}

absl::Status session::cmd_edit(const std::string& name, std::string_view args) {
  if (!target_->has(TOOLHOST_DT_CAP_WRITE_VIRTUAL)) {
    return absl::UnimplementedError("the " + target_->backend() + " backend cannot write memory");
  }
  const size_t unit = unit_of(name);
  size_t pos = 0;
  skip_blanks(args, pos);
  if (pos >= args.size()) return usage_error(name, "an address and at least one value are needed");
  auto address = eval_prefix(args, pos);
  if (!address.ok()) return usage_error(name, std::string(address.status().message()));
  std::string data;
  while (pos < args.size()) {
    auto v = eval_prefix(args, pos);
    if (!v.ok()) return usage_error(name, std::string(v.status().message()));
    if (unit < 8 && *v >> (unit * 8) != 0 && ~*v >> (unit * 8 - 1) != 0) {
      return usage_error(name, hex(*v) + " does not fit in " + std::to_string(unit) + " byte(s)");
    }
    char bytes[8];
    std::memcpy(bytes, &*v, 8);
    data.append(bytes, unit);
  }
  if (data.empty()) return usage_error(name, "at least one value is needed");
  return target_->write(*address, data);
}

absl::Status session::cmd_search(const std::string& name, std::string_view args) {
  size_t pos = 0;
  size_t unit = 1;
  bool ascii = false, unicode = false;
  skip_blanks(args, pos);
  if (pos < args.size() && args[pos] == '-') {
    const std::string flag = take_word(args, pos);
    if (flag == "-b")
      unit = 1;
    else if (flag == "-w")
      unit = 2;
    else if (flag == "-d")
      unit = 4;
    else if (flag == "-q")
      unit = 8;
    else if (flag == "-a")
      ascii = true;
    else if (flag == "-u")
      unicode = true;
    else
      return usage_error(name, "unknown option " + flag);
  }
  uint64_t start = 0, count = 0;
  if (auto s = parse_range(name, args, pos, 1, 0, start, count, std::nullopt); !s.ok()) return s;
  if (count == 0) return usage_error(name, "give the range as <start> L<length>");
  std::string pattern;
  if (ascii || unicode) {
    auto q = take_quoted(args, pos);
    if (!q || q->empty()) return usage_error(name, "the pattern is a quoted string for -a and -u");
    for (char c : *q) {
      pattern += c;
      if (unicode) pattern += '\0';
    }
  } else {
    while (pos < args.size()) {
      auto v = eval_prefix(args, pos);
      if (!v.ok()) return usage_error(name, std::string(v.status().message()));
      char bytes[8];
      std::memcpy(bytes, &*v, 8);
      pattern.append(bytes, unit);
    }
  }
  if (pattern.empty()) return usage_error(name, "a pattern is needed");
  auto data = target_->read(start, count);
  if (!data.ok())
    return absl::NotFoundError("Memory access error at " + address_text(start) + ": " +
                               std::string(data.status().message()));
  size_t found = 0;
  std::string list = "[";
  for (size_t at = data->find(pattern); at != std::string::npos; at = data->find(pattern, at + 1)) {
    if (++found > 1000) {
      out_ += "(more than 1000 matches; narrow the range)\n";
      break;
    }
    out_ += byte_line(start + at, *data, at, std::min<size_t>(data->size(), at + 16)) + "\n";
    if (list.size() > 1) list += ',';
    list += sdk::quote(hex(start + at));
  }
  result_json_ = R"({"matches":)" + list + "]}";
  if (found == 0) out_ += "No match in " + address_text(start) + " L" + hex(count).substr(2) + ".\n";
  return absl::OkStatus();
}

absl::Status session::cmd_unassemble(const std::string& name, std::string_view args) {
  uint64_t start = 0, count = 0;
  size_t pos = 0;
  std::optional<uint64_t> fallback = next_unassemble_ != 0 ? std::optional<uint64_t>(next_unassemble_) : std::nullopt;
  if (!fallback) {
    if (auto at = pc(); at.ok()) fallback = *at;
  }
  if (auto s = parse_range(name, args, pos, 1, 8, start, count, fallback); !s.ok()) return s;
  if (pos < args.size()) return usage_error(name, "unexpected '" + std::string(args.substr(pos)) + "'");
  std::vector<disasm::instruction> list;
  auto decode_from = [&](uint64_t from, size_t bytes_wanted, size_t max_count) -> absl::Status {
    auto bytes = target_->read(from, bytes_wanted);
    if (!bytes.ok())
      return absl::NotFoundError("Memory access error at " + address_text(from) + ": " +
                                 std::string(bytes.status().message()));
    list =
        decoder_.decode_all(from, std::span(reinterpret_cast<const uint8_t*>(bytes->data()), bytes->size()), max_count);
    return absl::OkStatus();
  };
  if (name == "u") {
    if (auto s = decode_from(start, count * 15, count); !s.ok()) return s;
  } else if (name == "uf") {
    auto fn = symbols_.function_at(start);
    if (!fn) return absl::NotFoundError("no function symbol holds " + address_text(start) + "; use u with a range");
    const uint64_t size = fn->second != 0 ? fn->second : 0x1000;
    if (auto s = decode_from(fn->first, static_cast<size_t>(std::min<uint64_t>(size, 0x10000)), 100000); !s.ok())
      return s;
    if (fn->second == 0) {
      auto end = std::find_if(list.begin(), list.end(), [](const auto& i) { return i.is_ret(); });
      if (end != list.end()) list.erase(end + 1, list.end());
    }
  } else {
    // ub: the instructions that end at `start`. From the function start when known, else
    // from the furthest back offset whose decoding lands exactly on `start`.
    auto fn = symbols_.function_at(start);
    std::vector<disasm::instruction> best;
    auto try_from = [&](uint64_t from) {
      if (from >= start) return false;
      if (!decode_from(from, static_cast<size_t>(start - from), SIZE_MAX).ok() || list.empty()) return false;
      const auto& last = list.back();
      if (last.address + last.length != start) return false;
      best = list;
      return true;
    };
    if (!(fn && start - fn->first < 0x4000 && try_from(fn->first))) {
      for (uint64_t back = count * 15; back > 0 && !try_from(start - back); --back) {
      }
    }
    list = best;
    if (list.size() > count) list.erase(list.begin(), list.end() - static_cast<std::ptrdiff_t>(count));
    if (list.empty()) return absl::NotFoundError("cannot find instructions ending at " + address_text(start));
  }
  uint64_t last_end = start;
  std::optional<source_position> last_line;
  for (const auto& insn : list) {
    const std::string sym = symbol_of(insn.address);
    // A header where a function starts and, with line information, where a source line does.
    auto line = symbols_.line_at(insn.address);
    const bool new_line = line && (!last_line || line->line != last_line->line || line->file != last_line->file);
    const bool header = (sym.find('+') == std::string::npos || new_line) && !sym.empty();
    out_ += instruction_line(insn.address, header || (&insn == &list.front() && !sym.empty()));
    last_line = line;
    last_end = insn.address + insn.length;
  }
  next_unassemble_ = last_end;
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
