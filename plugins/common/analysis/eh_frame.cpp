#include "toolhost/analysis/eh_frame.hpp"

#include <map>
#include <optional>
#include <string>

namespace toolhost::analysis {
namespace {

// DW_EH_PE_* (the LSB's pointer encodings): the low nibble is the format, 0x70 the base.
constexpr uint8_t kOmit = 0xff;
constexpr uint8_t kPcRelative = 0x10;

// A cursor over untrusted bytes: every read checks the bounds and a failed read sticks.
class cursor {
 public:
  cursor(std::span<const uint8_t> bytes, size_t at, size_t end) : bytes_(bytes), at_(at), end_(end) {}

  bool ok() const noexcept { return ok_; }
  size_t at() const noexcept { return at_; }
  size_t left() const noexcept { return ok_ && at_ <= end_ ? end_ - at_ : 0; }

  uint64_t fixed(size_t n) {
    if (left() < n) return fail();
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(bytes_[at_ + i]) << (8 * i);
    at_ += n;
    return v;
  }
  int64_t fixed_signed(size_t n) {
    const uint64_t v = fixed(n);
    if (n >= 8) return static_cast<int64_t>(v);
    const uint64_t sign = 1ULL << (8 * n - 1);
    return static_cast<int64_t>((v ^ sign) - sign);
  }
  uint64_t uleb() {
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
      if (left() == 0) return fail();
      const uint8_t b = bytes_[at_++];
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return fail();
  }
  int64_t sleb() {
    uint64_t v = 0;
    unsigned shift = 0;
    for (; shift < 64; shift += 7) {
      if (left() == 0) return static_cast<int64_t>(fail());
      const uint8_t b = bytes_[at_++];
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) {
        if (shift + 7 < 64 && (b & 0x40) != 0) v |= ~0ULL << (shift + 7);
        return static_cast<int64_t>(v);
      }
    }
    return static_cast<int64_t>(fail());
  }
  std::string text() {
    std::string out;
    while (left() > 0 && bytes_[at_] != 0) out.push_back(static_cast<char>(bytes_[at_++]));
    if (left() == 0) {
      fail();
      return {};
    }
    ++at_;  // the terminating NUL
    return out;
  }
  void skip(uint64_t n) {
    if (left() < n)
      fail();
    else
      at_ += static_cast<size_t>(n);
  }
  // A pointer in `encoding`; `base` is the address of the field itself (for pc-relative ones).
  std::optional<uint64_t> pointer(uint8_t encoding, uint64_t base, unsigned pointer_size) {
    if (encoding == kOmit) return std::nullopt;
    uint64_t v = 0;
    switch (encoding & 0x0f) {
      case 0x00: v = fixed(pointer_size); break;
      case 0x01: v = uleb(); break;
      case 0x02: v = fixed(2); break;
      case 0x03: v = fixed(4); break;
      case 0x04: v = fixed(8); break;
      case 0x09: v = static_cast<uint64_t>(sleb()); break;
      case 0x0a: v = static_cast<uint64_t>(fixed_signed(2)); break;
      case 0x0b: v = static_cast<uint64_t>(fixed_signed(4)); break;
      case 0x0c: v = static_cast<uint64_t>(fixed_signed(8)); break;
      default: fail(); return std::nullopt;
    }
    if (!ok_) return std::nullopt;
    // Indirect pointers and bases other than the field's own address (text-, data- or
    // function-relative) need more than the section to resolve; gcc and clang emit pc-relative.
    switch (encoding & 0xf0) {
      case 0x00: break;
      case kPcRelative: v += base; break;
      default: return std::nullopt;
    }
    return pointer_size == 4 ? (v & 0xffffffffULL) : v;
  }

 private:
  uint64_t fail() {
    ok_ = false;
    return 0;
  }

  std::span<const uint8_t> bytes_;
  size_t at_;
  size_t end_;
  bool ok_ = true;
};

struct cie {
  uint8_t fde_encoding = 0;  // absptr unless the augmentation says R
  bool has_augmentation_data = false;
};

// Reads the length of the entry at `at`; sets `content` to where its body starts.
std::optional<uint64_t> entry_length(std::span<const uint8_t> bytes, size_t at, size_t& content, bool& is64) {
  cursor c(bytes, at, bytes.size());
  uint64_t length = c.fixed(4);
  is64 = length == 0xffffffffULL;
  if (is64) length = c.fixed(8);
  if (!c.ok() || length > c.left()) return std::nullopt;
  content = c.at();
  return length;
}

std::optional<cie> parse_cie(std::span<const uint8_t> bytes, size_t at, uint64_t address, unsigned pointer_size) {
  size_t content = 0;
  bool is64 = false;
  auto length = entry_length(bytes, at, content, is64);
  if (!length || *length == 0) return std::nullopt;
  cursor c(bytes, content, content + static_cast<size_t>(*length));
  if (c.fixed(is64 ? 8 : 4) != 0) return std::nullopt;  // a CIE's id is 0 in .eh_frame
  const uint64_t version = c.fixed(1);
  if (version != 1 && version != 3 && version != 4) return std::nullopt;
  const std::string augmentation = c.text();
  if (augmentation.find("eh") != std::string::npos) c.skip(pointer_size);
  if (version == 4) c.skip(2);  // address size, segment selector size
  c.uleb();                     // code alignment
  c.sleb();                     // data alignment
  if (version == 1)
    c.skip(1);
  else
    c.uleb();  // return address register
  cie out;
  if (!augmentation.empty() && augmentation[0] == 'z') {
    out.has_augmentation_data = true;
    const uint64_t data_length = c.uleb();
    if (!c.ok() || data_length > c.left()) return std::nullopt;
    cursor data(bytes, c.at(), c.at() + static_cast<size_t>(data_length));
    for (size_t i = 1; i < augmentation.size() && data.ok(); ++i) {
      const char code = augmentation[i];
      if (code == 'R') {
        out.fde_encoding = static_cast<uint8_t>(data.fixed(1));
      } else if (code == 'P') {
        const auto encoding = static_cast<uint8_t>(data.fixed(1));
        data.pointer(encoding & 0x7f, address + data.at(), pointer_size);  // the personality routine
      } else if (code == 'L') {
        data.skip(1);
      } else if (code != 'S' && code != 'B' && code != 'G') {
        break;  // an augmentation we do not know: what follows it cannot be read
      }
    }
    if (!data.ok()) return std::nullopt;
  }
  if (!c.ok()) return std::nullopt;
  return out;
}

}  // namespace

std::vector<code_extent> parse_eh_frame(std::span<const uint8_t> bytes, uint64_t address, unsigned pointer_size) {
  std::vector<code_extent> out;
  if (pointer_size != 4 && pointer_size != 8) return out;
  std::map<size_t, std::optional<cie>> cies;
  size_t at = 0;
  while (bytes.size() - at >= 4) {
    size_t content = 0;
    bool is64 = false;
    auto length = entry_length(bytes, at, content, is64);
    if (!length || *length == 0) break;  // a zero length terminates the section
    const size_t end = content + static_cast<size_t>(*length);
    cursor c(bytes, content, end);
    const size_t id_at = c.at();
    const uint64_t id = c.fixed(is64 ? 8 : 4);
    if (c.ok() && id != 0 && id <= id_at) {
      // An FDE: the id is the distance back to its CIE.
      const size_t cie_at = id_at - static_cast<size_t>(id);
      auto [it, inserted] = cies.try_emplace(cie_at);
      if (inserted) it->second = parse_cie(bytes, cie_at, address, pointer_size);
      if (it->second) {
        const uint8_t encoding = it->second->fde_encoding;
        auto start = c.pointer(encoding, address + c.at(), pointer_size);
        auto range = c.pointer(encoding & 0x0f, 0, pointer_size);  // a length: no base applies
        if (start && range && *range != 0 && *start + *range > *start) out.push_back({*start, *start + *range});
      }
    }
    at = end;
  }
  return out;
}

}  // namespace toolhost::analysis
