// .pdata (RUNTIME_FUNCTION) and UNWIND_INFO of x64 images.
#include <algorithm>

#include <absl/strings/str_format.h>

#include "bytes.hpp"
#include "toolhost/pe/image.hpp"

namespace toolhost::pe {

using detail::u16;
using detail::u32;

namespace {
constexpr uint8_t kFlagExceptionHandler = 1;
constexpr uint8_t kFlagTerminationHandler = 2;
constexpr uint8_t kFlagChainInfo = 4;
}  // namespace

absl::StatusOr<std::vector<runtime_function>> image::runtime_functions() const {
  std::vector<runtime_function> out;
  if (header().machine != kMachineAmd64) return out;
  const data_directory dir = directory_entry(kExceptionDirectory);
  if (dir.rva == 0 || dir.size == 0) return out;
  const size_t count = dir.size / 12;
  auto raw = read(dir.rva, count * 12);
  if (!raw.ok()) return raw.status();
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    runtime_function f{u32(*raw, i * 12), u32(*raw, i * 12 + 4), u32(*raw, i * 12 + 8)};
    if (f.begin == 0 && f.end == 0) continue;  // padding at the end of the table
    if (f.end <= f.begin || f.end > header().size_of_image) {
      return error(absl::StrFormat(".pdata entry %u is [0x%x, 0x%x)", i, f.begin, f.end));
    }
    if (!out.empty() && f.begin < out.back().end) {
      return error(absl::StrFormat(".pdata entry %u (0x%x) is not after the one before it (0x%x)", i, f.begin,
                                   out.back().begin));
    }
    out.push_back(f);
  }
  return out;
}

absl::StatusOr<std::optional<runtime_function>> image::function_entry(uint32_t rva) const {
  auto all = runtime_functions();
  if (!all.ok()) return all.status();
  auto it = std::upper_bound(all->begin(), all->end(), rva,
                             [](uint32_t a, const runtime_function& f) { return a < f.begin; });
  if (it == all->begin()) return std::optional<runtime_function>();
  --it;
  if (rva >= it->end) return std::optional<runtime_function>();
  return std::optional<runtime_function>(*it);
}

absl::StatusOr<unwind_info> image::unwind(uint32_t unwind_info_rva) const {
  auto head = read(unwind_info_rva, 4);
  if (!head.ok()) return head.status();
  unwind_info info;
  const uint8_t b0 = static_cast<uint8_t>((*head)[0]);
  info.version = b0 & 7;
  info.flags = b0 >> 3;
  info.prolog_size = static_cast<uint8_t>((*head)[1]);
  const uint8_t slots = static_cast<uint8_t>((*head)[2]);
  const uint8_t frame = static_cast<uint8_t>((*head)[3]);
  info.frame_register = frame & 0xf;
  info.frame_offset = static_cast<uint8_t>((frame >> 4) * 16);
  if (info.version != 1 && info.version != 2) {
    return error(absl::StrFormat("UNWIND_INFO at RVA 0x%x has version %u", unwind_info_rva, info.version));
  }
  // The codes take an even number of slots; a handler RVA or a chained entry follows.
  const size_t code_bytes = (size_t{slots} + (slots & 1)) * 2;
  const bool chained = (info.flags & kFlagChainInfo) != 0;
  const bool handler = (info.flags & (kFlagExceptionHandler | kFlagTerminationHandler)) != 0;
  const size_t tail = chained ? 12 : handler ? 4 : 0;
  auto body = read(unwind_info_rva + 4, code_bytes + tail);
  if (!body.ok()) return body.status();
  auto slot = [&](size_t i) { return u16(*body, i * 2); };
  for (size_t i = 0; i < slots;) {
    const uint16_t s = slot(i);
    unwind_code c;
    c.prolog_offset = static_cast<uint8_t>(s & 0xff);
    c.op = static_cast<uint8_t>((s >> 8) & 0xf);
    c.info = static_cast<uint8_t>(s >> 12);
    size_t used = 1;
    switch (c.op) {
      case kPushNonvol:
      case kSetFpreg:
      case kPushMachframe: break;
      case kAllocSmall: c.value = uint32_t{c.info} * 8 + 8; break;
      case kAllocLarge:
        if (c.info == 0) {
          used = 2;
          if (i + 1 < slots) c.value = uint32_t{slot(i + 1)} * 8;
        } else if (c.info == 1) {
          used = 3;
          if (i + 2 < slots) c.value = uint32_t{slot(i + 1)} | (uint32_t{slot(i + 2)} << 16);
        } else {
          return error(
              absl::StrFormat("UNWIND_INFO at RVA 0x%x: UWOP_ALLOC_LARGE with OpInfo %u", unwind_info_rva, c.info));
        }
        break;
      case kSaveNonvol:
        used = 2;
        if (i + 1 < slots) c.value = uint32_t{slot(i + 1)} * 8;
        break;
      case kSaveNonvolFar:
        used = 3;
        if (i + 2 < slots) c.value = uint32_t{slot(i + 1)} | (uint32_t{slot(i + 2)} << 16);
        break;
      case kEpilog:
        // Version 2: an epilog descriptor (one slot); version 1: UWOP_SAVE_XMM (two).
        used = info.version == 2 ? 1 : 2;
        if (info.version == 1 && i + 1 < slots) c.value = uint32_t{slot(i + 1)} * 8;
        break;
      case kSpareCode: used = info.version == 2 ? 2 : 3; break;
      case kSaveXmm128:
        used = 2;
        if (i + 1 < slots) c.value = uint32_t{slot(i + 1)} * 16;
        break;
      case kSaveXmm128Far:
        used = 3;
        if (i + 2 < slots) c.value = uint32_t{slot(i + 1)} | (uint32_t{slot(i + 2)} << 16);
        break;
      default: return error(absl::StrFormat("UNWIND_INFO at RVA 0x%x has unwind op %u", unwind_info_rva, c.op));
    }
    if (i + used > slots) {
      return error(absl::StrFormat("UNWIND_INFO at RVA 0x%x: unwind op %u runs past its %u slots", unwind_info_rva,
                                   c.op, slots));
    }
    info.codes.push_back(c);
    i += used;
  }
  if (chained) {
    info.chained = runtime_function{u32(*body, code_bytes), u32(*body, code_bytes + 4), u32(*body, code_bytes + 8)};
  } else if (handler) {
    info.handler = u32(*body, code_bytes);
  }
  return info;
}

}  // namespace toolhost::pe
