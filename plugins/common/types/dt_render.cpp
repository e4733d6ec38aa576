// `dt`: one walk over a type that writes WinDbg's text and the JSON decoding side by side.
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>

#include <absl/strings/str_format.h>
#include <toolhost/text/utf16.hpp>

#include "toolhost/types/dt.hpp"

namespace toolhost::types {
namespace {

constexpr int kMaxDepth = 64;
constexpr size_t kBlockLimit = 1u << 20;  // one read covers a type up to this size
constexpr size_t kStringLimit = 1024;     // characters of a string value
constexpr size_t kDefaultArrayElements = 16;

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

std::string hex(uint64_t v) { return absl::StrFormat("0x%x", v); }

// A bitfield's bits out of its storage unit (a position past 64 bits, from a bad file, reads 0).
uint64_t bitfield(uint64_t unit, const member& m) {
  if (m.bit_position >= 64) return 0;
  return (unit >> m.bit_position) & (m.bit_length >= 64 ? ~0ull : ((1ull << m.bit_length) - 1));
}

// "0xffffa704`3f68e440" (64-bit) or "0x3f68e440" (32-bit), as WinDbg prints pointers.
std::string pointer_text(uint64_t v, uint32_t size) {
  if (size == 4) return absl::StrFormat("0x%08x", v & 0xffffffffu);
  return absl::StrFormat("0x%08x`%08x", v >> 32, v & 0xffffffffu);
}

std::string char_text(uint64_t c) {
  if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
  return "''";
}

// UTF-16 or 8-bit characters to text: printable ASCII kept, others as '.' except that valid
// UTF-16 above 0x7f is written as UTF-8.
// The text of a C string of `unit`-byte characters (1: bytes as Latin-1, 2: UTF-16LE), up to its
// NUL, with controls as '.' so that it cannot break dt's line.
std::string char_text(std::span<const uint8_t> raw, size_t unit) {
  if (unit == 2) return toolhost::text::utf16le_to_utf8(raw, {.stop_at_nul = true, .printable = true});
  std::string out;
  for (uint8_t c : raw) {
    if (c == 0) break;
    toolhost::text::append_printable_utf8(out, c);
  }
  return out;
}

struct filter_set {
  std::vector<std::vector<std::string>> paths;  // empty: everything
  bool all() const { return paths.empty(); }
};

class renderer {
 public:
  explicit renderer(const dt_request& r) : r_(r), t_(r.table), ptr_size_(r.table.pointer_size()) {}

  absl::StatusOr<dt_output> run() {
    const type_id id = strip_aliases(t_, r_.id);
    if (id == kNoType) return absl::InvalidArgumentError("the type has no definition");
    const type& top = t_.get(id);
    filter_set filters;
    for (const auto& f : r_.options.fields) {
      std::vector<std::string> parts;
      size_t start = 0;
      while (start <= f.size()) {
        size_t dot = f.find('.', start);
        if (dot == std::string::npos) dot = f.size();
        parts.push_back(f.substr(start, dot - start));
        start = dot + 1;
      }
      filters.paths.push_back(std::move(parts));
    }
    json_ = "{\"type\":" + json_quote(r_.qualified_name) + ",\"name\":" + json_quote(type_word(t_, id)) +
            ",\"kind\":" + json_quote(kind_name(top)) + ",\"size\":" + std::to_string(top.size) +
            ",\"address\":" + (r_.address ? json_quote(hex(*r_.address)) : "null");
    if (r_.address) {
      if (!r_.read) return absl::InvalidArgumentError("dt at an address needs a memory reader");
      // One read for the whole type, so that a slow link costs one round trip per dt.
      const size_t want = static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(top.size, 1), kBlockLimit));
      block_.resize(want);
      block_.resize(r_.read(*r_.address, std::span(block_.data(), block_.size())));
      block_at_ = *r_.address;
      if (block_.empty()) {
        return absl::NotFoundError(absl::StrFormat("Memory read error %s: %s at that address is not readable",
                                                   pointer_text(*r_.address, 8), r_.qualified_name));
      }
      line(r_.qualified_name);
    }
    if (top.k == kind::enumeration) {
      json_ += ",\"enumerators\":[";
      bool first = true;
      for (const auto& e : top.enumerators) {
        line(absl::StrFormat("   %s = 0n%d", e.name, e.value));
        json_ += std::string(first ? "" : ",") + "{\"name\":" + json_quote(e.name) +
                 ",\"value\":" + std::to_string(e.value) + "}";
        first = false;
      }
      json_ += "]";
    } else if (top.k == kind::structure || top.k == kind::union_) {
      if (top.incomplete) {
        return absl::NotFoundError(r_.qualified_name +
                                   " is only declared in its module's symbols; its members are not known");
      }
      json_ += ",\"fields\":[";
      first_field_.push_back(true);
      members(id, r_.address, 0, filters);
      first_field_.pop_back();
      json_ += "]";
    } else if (r_.address) {
      // A scalar, pointer or array type at an address: its value alone.
      std::string json_value;
      line("   " + value_text(id, *r_.address, 0, 0, json_value));
      json_ += json_value;
    } else {
      line("   " + type_word(t_, id));
    }
    if (omitted_ > 0) {
      text_ += absl::StrFormat("(%u more lines not shown: name the fields wanted, or use a smaller -r)\n", omitted_);
    }
    if (unreadable_) text_ += "(some memory was not readable; its fields show ??)\n";
    json_ += "}";
    return dt_output{std::move(text_), std::move(json_)};
  }

  dt_output value_only() {
    std::string json;
    std::string text = value_text(r_.id, *r_.address, 0, 0, json);
    return dt_output{std::move(text), value_json(r_.id, *r_.address, 0)};
  }

  // A value's JSON decoding, structures and arrays with their members (4 levels, 64 elements).
  std::string value_json(type_id id, uint64_t address, int depth) {
    id = strip_aliases(t_, id);
    const type* t = id == kNoType ? nullptr : &t_.get(id);
    if (t != nullptr && depth < 4 && (t->k == kind::structure || t->k == kind::union_) && !t->incomplete) {
      std::string out = "{\"fields\":[";
      bool first = true;
      member_json(*t, address, depth, out, first);
      return out + "]}";
    }
    if (t != nullptr && depth < 4 && t->k == kind::array && t->count > 0) {
      const type_id et = strip_aliases(t_, t->target);
      const type* e = et == kNoType ? nullptr : &t_.get(et);
      const bool text =
          e != nullptr && e->k == kind::base &&
          (e->enc == encoding::signed_char || e->enc == encoding::unsigned_char || e->enc == encoding::wide_char);
      if (e != nullptr && !text) {
        std::string out = "{\"elements\":[";
        for (uint64_t i = 0; i < std::min<uint64_t>(t->count, 64); ++i) {
          out += (i ? "," : "") + value_json(et, address + i * e->size, depth + 1);
        }
        return out + "]}";
      }
    }
    std::string json;
    value_text(id, address, depth, 0, json);
    return json.empty() ? "{}" : "{" + json.substr(1) + "}";
  }

  void member_json(const type& st, uint64_t address, int depth, std::string& out, bool& first,
                   int anonymous_depth = 0) {
    for (const member& m : st.members) {
      const type_id mt = strip_aliases(t_, m.type);
      const type* t = mt == kNoType ? nullptr : &t_.get(mt);
      if (m.name.empty() && t != nullptr && (t->k == kind::structure || t->k == kind::union_)) {
        // An anonymous member's fields are the parent's (bounded as in members()).
        if (anonymous_depth < kMaxDepth) member_json(*t, address + m.offset, depth, out, first, anonymous_depth + 1);
        continue;
      }
      out += std::string(first ? "" : ",") + "{\"name\":" + json_quote(m.base_class ? "__BaseClass" : m.name) +
             ",\"value\":";
      first = false;
      if (m.bit_length > 0) {
        const size_t unit = t != nullptr && t->size > 0 && t->size <= 8 ? t->size : 4;
        auto v = load(address + m.offset, unit);
        const uint64_t bits = v ? bitfield(*v, m) : 0;
        out += v ? "{\"value\":" + json_quote(hex(bits)) + "}" : "{\"value\":null}";
      } else {
        out += value_json(mt, address + m.offset, depth + 1);
      }
      out += "}";
    }
  }

 private:
  static const char* kind_name(const type& t) {
    switch (t.k) {
      case kind::base: return "base";
      case kind::pointer: return "pointer";
      case kind::array: return "array";
      case kind::structure: return "structure";
      case kind::union_: return "union";
      case kind::enumeration: return "enumeration";
      case kind::function: return "function";
      case kind::alias: return "alias";
    }
    return "base";
  }

  void line(const std::string& text) {
    if (lines_ >= r_.options.max_lines) {
      ++omitted_;
      return;
    }
    ++lines_;
    text_ += text;
    text_ += '\n';
  }

  // Reads `n` bytes at `address` (from the block when it holds them).
  bool read(uint64_t address, void* out, size_t n) {
    if (n == 0) return true;  // a zero-length array or an empty type: nothing to copy
    if (address >= block_at_ && address - block_at_ <= block_.size() && block_.size() - (address - block_at_) >= n) {
      std::memcpy(out, block_.data() + (address - block_at_), n);
      return true;
    }
    if (!r_.read) return false;
    return r_.read(address, std::span(static_cast<uint8_t*>(out), n)) == n;
  }

  std::optional<uint64_t> load(uint64_t address, size_t size) {
    if (size == 0 || size > 8) return std::nullopt;
    uint64_t v = 0;
    if (!read(address, &v, size)) {
      unreadable_ = true;
      return std::nullopt;
    }
    return v;
  }

  static std::string padded(const std::string& name) {
    return name.size() < 16 ? name + std::string(16 - name.size(), ' ') : name;
  }

  static std::string indent(int depth) { return std::string(3 + 3 * depth, ' '); }

  // Filters that apply under a member named `name`: nullopt when the member is not shown;
  // an empty set when it is shown whole.
  static std::optional<filter_set> under(const filter_set& f, const std::string& name, bool& explicit_path) {
    explicit_path = false;
    if (f.all()) return filter_set{};
    filter_set rest;
    bool whole = false, matched = false;
    for (const auto& p : f.paths) {
      if (p.empty() || !wildcard_match(p[0], name)) continue;
      matched = true;
      if (p.size() == 1) {
        whole = true;
      } else {
        rest.paths.emplace_back(p.begin() + 1, p.end());
      }
    }
    if (!matched) return std::nullopt;
    if (whole) return filter_set{};
    explicit_path = true;
    return rest;
  }

  void open_field() {
    if (!first_field_.back()) json_ += ",";
    first_field_.back() = false;
  }

  void members(type_id id, std::optional<uint64_t> base, int depth, const filter_set& filters,
               uint64_t extra_offset = 0, int anonymous_depth = 0) {
    const type& st = t_.get(id);
    for (const member& m : st.members) {
      const type_id mt = strip_aliases(t_, m.type);
      const uint64_t offset = m.offset + extra_offset;
      if (m.name.empty() && mt != kNoType && (t_.get(mt).k == kind::structure || t_.get(mt).k == kind::union_)) {
        // An anonymous struct or union (DWARF keeps them): its members read as the parent's. Bounded,
        // since a damaged file can make one contain itself (fuzz_dwarf_info overflowed the stack).
        if (anonymous_depth < kMaxDepth) members(mt, base, depth, filters, offset, anonymous_depth + 1);
        continue;
      }
      bool explicit_path = false;
      const std::string name = m.base_class ? "__BaseClass" : m.name;
      auto child_filters = under(filters, name, explicit_path);
      if (!child_filters) continue;
      one_member(m, name, mt, offset, base, depth, *child_filters, explicit_path);
    }
  }

  void one_member(const member& m, const std::string& name, type_id mt, uint64_t offset, std::optional<uint64_t> base,
                  int depth, const filter_set& child_filters, bool explicit_path) {
    open_field();
    const std::string word = type_word(t_, mt);
    json_ +=
        "{\"name\":" + json_quote(name) + ",\"offset\":" + std::to_string(offset) + ",\"type\":" + json_quote(word);
    const type* t = mt == kNoType ? nullptr : &t_.get(mt);
    if (t != nullptr) json_ += ",\"kind\":" + json_quote(kind_name(*t)) + ",\"size\":" + std::to_string(t->size);
    std::string head = indent(depth) + absl::StrFormat("+0x%03x ", offset) + padded(name) + " : ";
    if (m.bit_length > 0) {
      json_ += absl::StrFormat(",\"bit_position\":%u,\"bit_length\":%u", m.bit_position, m.bit_length);
      if (!base) {
        line(head + absl::StrFormat("Pos %u, %u Bit%s", m.bit_position, m.bit_length, m.bit_length == 1 ? "" : "s"));
      } else {
        const size_t unit = t != nullptr && t->size > 0 && t->size <= 8 ? t->size : 4;
        auto v = load(*base + offset, unit);
        if (!v) {
          line(head + "??");
          json_ += ",\"value\":null";
        } else {
          const uint64_t bits = bitfield(*v, m);
          std::string binary = "0y";
          for (int i = m.bit_length - 1; i >= 0; --i) binary += ((bits >> i) & 1) ? '1' : '0';
          line(head + binary);
          json_ += ",\"value\":" + json_quote(hex(bits));
        }
      }
      json_ += "}";
      return;
    }
    const bool aggregate = t != nullptr && (t->k == kind::structure || t->k == kind::union_);
    const bool expand = aggregate && !t->incomplete && (explicit_path || depth < r_.options.depth) && depth < kMaxDepth;
    if (!base) {
      line(head + word);
    } else {
      std::string json_value;
      line(head + value_text(mt, *base + offset, depth, m.bit_length, json_value));
      json_ += json_value;
    }
    if (expand) {
      json_ += ",\"fields\":[";
      first_field_.push_back(true);
      members(mt, base ? std::optional<uint64_t>(*base + offset) : std::nullopt, depth + 1, child_filters);
      first_field_.pop_back();
      json_ += "]";
    } else if (explicit_path && base && t != nullptr && t->k == kind::pointer && !child_filters.all()) {
      // A path through a pointer: follow it.
      const type_id target = strip_aliases(t_, t->target);
      auto p = load(*base + offset, ptr_size_);
      if (p && *p != 0 && target != kNoType &&
          (t_.get(target).k == kind::structure || t_.get(target).k == kind::union_) && depth < kMaxDepth) {
        json_ += ",\"target\":{\"address\":" + json_quote(hex(*p)) + ",\"fields\":[";
        first_field_.push_back(true);
        members(target, *p, depth + 1, child_filters);
        first_field_.pop_back();
        json_ += "]}";
      }
    } else if (t != nullptr && t->k == kind::array && r_.options.array_elements > 0) {
      array_elements(*t, base ? std::optional<uint64_t>(*base + offset) : std::nullopt, depth + 1);
    }
    json_ += "}";
  }

  void array_elements(const type& array, std::optional<uint64_t> at, int depth) {
    const type_id et = strip_aliases(t_, array.target);
    if (et == kNoType) return;
    const type& e = t_.get(et);
    const size_t limit = r_.options.array_elements == SIZE_MAX ? kDefaultArrayElements : r_.options.array_elements;
    const uint64_t shown = std::min<uint64_t>(array.count, limit);
    json_ += ",\"elements\":[";
    for (uint64_t i = 0; i < shown; ++i) {
      if (i > 0) json_ += ",";
      std::string json_value;
      std::string text = indent(depth) + absl::StrFormat("[%u] ", i);
      if (at) {
        text += value_text(et, *at + i * e.size, depth, 0, json_value);
      } else {
        text += type_word(t_, et);
      }
      line(text);
      json_ += "{\"index\":" + std::to_string(i) + json_value + "}";
    }
    json_ += "]";
    if (array.count > shown)
      line(indent(depth) + absl::StrFormat("... %u more elements not shown", array.count - shown));
  }

  // A string member: UNICODE_STRING-like structs and pointers to characters.
  std::string read_string(uint64_t address, size_t bytes, size_t unit) {
    bytes = std::min<size_t>(bytes, kStringLimit * unit);
    std::vector<uint8_t> raw(bytes);
    const size_t got = r_.read ? r_.read(address, raw) : 0;
    return char_text(std::span<const uint8_t>(raw.data(), got), unit);
  }

  // The text after " : " for a value of type `id` at `address`, and its JSON members (each
  // starting with ',') in `json`.
  std::string value_text(type_id id, uint64_t address, int depth, uint8_t, std::string& json) {
    id = strip_aliases(t_, id);
    if (id == kNoType) return "Void";
    const type& t = t_.get(id);
    switch (t.k) {
      case kind::base: return base_value(t, address, json);
      case kind::enumeration: {
        auto v = load(address, t.size);
        if (!v) {
          json += ",\"value\":null";
          return "??";
        }
        int64_t value = static_cast<int64_t>(*v);
        if (t.size < 8 && (*v >> (t.size * 8 - 1)) & 1) value = static_cast<int64_t>(*v | (~0ull << (t.size * 8)));
        json += ",\"value\":" + std::to_string(value);
        for (const auto& e : t.enumerators) {
          if (e.value == value) {
            json += ",\"enumerator\":" + json_quote(e.name);
            return absl::StrFormat("0n%d ( %s )", value, e.name);
          }
        }
        return absl::StrFormat("0n%d", value);
      }
      case kind::pointer: {
        auto v = load(address, ptr_size_);
        if (!v) {
          json += ",\"value\":null";
          return "??";
        }
        json += ",\"value\":" + json_quote(hex(*v));
        if (*v == 0) return "(null)";
        const type_id target = strip_aliases(t_, t.target);
        std::string text = pointer_text(*v, ptr_size_);
        if (target != kNoType && t_.get(target).k == kind::function) {
          const std::string sym = r_.describe ? r_.describe(*v) : "";
          if (!sym.empty()) json += ",\"symbol\":" + json_quote(sym);
          return text + "     " + type_word(t_, target) + (sym.empty() ? "" : "  " + sym);
        }
        return text + " " + type_word(t_, t.target);
      }
      case kind::array: {
        const type_id et = strip_aliases(t_, t.target);
        const type* e = et == kNoType ? nullptr : &t_.get(et);
        const std::string prefix = "[" + std::to_string(t.count) + "] ";
        if (e != nullptr && e->k == kind::base &&
            (e->enc == encoding::signed_char || e->enc == encoding::unsigned_char || e->enc == encoding::wide_char)) {
          const size_t unit = e->enc == encoding::wide_char ? 2 : 1;
          std::vector<uint8_t> raw(static_cast<size_t>(std::min<uint64_t>(t.count, kStringLimit)) * unit);
          if (!read(address, raw.data(), raw.size())) {
            unreadable_ = true;
            json += ",\"string\":null";
            return prefix + "??";
          }
          const std::string s = char_text(raw, unit);
          json += ",\"string\":" + json_quote(s);
          return prefix + " \"" + s + "\"";
        }
        if (e == nullptr || t.count == 0) return prefix + type_word(t_, t.target);
        // WinDbg shows an array by its first element.
        std::string ignored;
        return prefix + value_text(et, address, depth, 0, ignored);
      }
      case kind::structure:
      case kind::union_: {
        const std::string name = type_word(t_, id);
        // Lists and counted strings get their one-line forms, as WinDbg gives them.
        const member* flink = nullptr;
        const member* blink = nullptr;
        const member* length = nullptr;
        const member* buffer = nullptr;
        for (const auto& m : t.members) {
          if (m.name == "Flink" || m.name == "next") flink = &m;
          if (m.name == "Blink" || m.name == "prev") blink = &m;
          if (m.name == "Length") length = &m;
          if (m.name == "Buffer") buffer = &m;
        }
        if (flink != nullptr && blink != nullptr && t.members.size() == 2) {
          auto f = load(address + flink->offset, ptr_size_);
          auto b = load(address + blink->offset, ptr_size_);
          if (!f || !b) return name + " ??";
          json += ",\"flink\":" + json_quote(hex(*f)) + ",\"blink\":" + json_quote(hex(*b));
          return name + " [ " + pointer_text(*f, ptr_size_) + " - " + pointer_text(*b, ptr_size_) + " ]";
        }
        if (length != nullptr && buffer != nullptr) {
          const type_id bt = strip_aliases(t_, buffer->type);
          const type_id ct = bt == kNoType ? kNoType : strip_aliases(t_, t_.get(bt).target);
          if (bt != kNoType && t_.get(bt).k == kind::pointer && ct != kNoType && t_.get(ct).k == kind::base) {
            const size_t unit = t_.get(ct).enc == encoding::wide_char || t_.get(ct).size == 2 ? 2 : 1;
            auto len = load(address + length->offset, 2);
            auto buf = load(address + buffer->offset, ptr_size_);
            if (!len || !buf) return name + " ??";
            const std::string s = *buf == 0 ? "" : read_string(*buf, static_cast<size_t>(*len), unit);
            json += ",\"string\":" + json_quote(s);
            return name + " \"" + s + "\"";
          }
        }
        return name;
      }
      case kind::function:
      case kind::alias: return type_word(t_, id);
    }
    return type_word(t_, id);
  }

  std::string base_value(const type& t, uint64_t address, std::string& json) {
    if (t.enc == encoding::none || t.size == 0) return "Void";
    if (t.size > 8) {
      json += ",\"value\":null";
      return type_word(t_, r_.id) == "" ? "??" : absl::StrFormat("(a %u-byte value)", t.size);
    }
    auto v = load(address, t.size);
    if (!v) {
      json += ",\"value\":null";
      return "??";
    }
    const uint64_t raw = *v;
    auto sign_extend = [&]() {
      if (t.size < 8 && (raw >> (t.size * 8 - 1)) & 1) return static_cast<int64_t>(raw | (~0ull << (t.size * 8)));
      return static_cast<int64_t>(raw);
    };
    switch (t.enc) {
      case encoding::boolean:
        json += std::string(",\"value\":") + (raw != 0 ? "true" : "false");
        return raw != 0 ? "True" : "False";
      case encoding::signed_char:
        json += ",\"value\":" + std::to_string(sign_extend());
        return absl::StrFormat("%d %s", sign_extend(), char_text(raw));
      case encoding::unsigned_char:
        json += ",\"value\":" + json_quote(hex(raw));
        return absl::StrFormat("0x%x %s", raw, char_text(raw));
      case encoding::wide_char:
        json += ",\"value\":" + json_quote(hex(raw));
        return absl::StrFormat("0x%x %s", raw, char_text(raw));
      case encoding::floating: {
        double d = 0;
        if (t.size == 4) {
          float f;
          const uint32_t r32 = static_cast<uint32_t>(raw);
          std::memcpy(&f, &r32, 4);
          d = f;
        } else if (t.size == 8) {
          std::memcpy(&d, &raw, 8);
        }
        json += ",\"value\":" + absl::StrFormat("%.17g", d);
        return absl::StrFormat("%g", d);
      }
      case encoding::signed_integer:
        json += ",\"value\":" + std::to_string(sign_extend());
        return absl::StrFormat("0n%d", sign_extend());
      case encoding::unsigned_integer:
      case encoding::none:
        json += ",\"value\":" + json_quote(hex(raw));
        if (raw == 0) return "0";  // WinDbg writes a zero as 0
        if (t.size == 8) return pointer_text(raw, 8);
        return hex(raw);
    }
    return hex(raw);
  }

  const dt_request& r_;
  const type_table& t_;
  uint32_t ptr_size_;
  std::string text_, json_;
  std::vector<bool> first_field_;
  size_t lines_ = 0, omitted_ = 0;
  bool unreadable_ = false;
  std::vector<uint8_t> block_;
  uint64_t block_at_ = 0;
};

}  // namespace

absl::StatusOr<dt_output> render_dt(const dt_request& request) {
  if (request.id == kNoType) return absl::InvalidArgumentError("no type to show");
  return renderer(request).run();
}

absl::StatusOr<dt_output> render_value(const dt_request& request) {
  if (request.id == kNoType) return absl::InvalidArgumentError("no type to show");
  if (!request.address || !request.read)
    return absl::InvalidArgumentError("a value needs an address and a memory reader");
  return renderer(request).value_only();
}

}  // namespace toolhost::types
