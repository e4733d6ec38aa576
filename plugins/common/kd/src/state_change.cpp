#include "toolhost/kd/state_change.h"

#include <algorithm>

#include <absl/strings/str_cat.h>

#include "toolhost/kd/bytes.h"
#include "toolhost/kd/protocol.h"

namespace toolhost::kd {

absl::StatusOr<state_change> decode_state_change(std::span<const uint8_t> p) {
  // The fixed part ends with the control report; shorter packets cannot be a state change.
  constexpr size_t kMinimum = kControlReportOffset + kControlReportStream + kMaxInstructionStream;
  if (p.size() < kMinimum) {
    return absl::InvalidArgumentError(
        absl::StrCat("A state change of ", p.size(), " bytes is too short (at least ", kMinimum, ")."));
  }
  state_change s;
  s.raw.assign(p.begin(), p.end());
  s.new_state = get_u32(p, 0);
  s.processor_level = get_u16(p, 4);
  s.processor = get_u16(p, 6);
  s.processor_count = get_u32(p, 8);
  s.thread = get_u64(p, 16);
  s.pc = get_u64(p, 24);
  const size_t u = kStateChangeUnion;
  if (s.new_state == kStateException) {
    s.exception_code = get_u32(p, u + 0);
    s.exception_flags = get_u32(p, u + 4);
    s.exception_address = get_u64(p, u + 16);
    const uint32_t n = std::min<uint32_t>(get_u32(p, u + 24), 15);
    for (uint32_t i = 0; i < n; ++i) s.exception_parameters.push_back(get_u64(p, u + 32 + 8 * i));
    s.first_chance = get_u32(p, u + 152);
  } else if (s.new_state == kStateLoadSymbols) {
    const uint32_t path_length = get_u32(p, u + 0);
    s.module_base = get_u64(p, u + 8);
    s.module_process = get_u64(p, u + 16);
    s.module_size = get_u32(p, u + 28);
    s.module_unload = p[u + 32] != 0;
    // The path is the packet's tail; its length is bounded by what arrived.
    const size_t take = std::min<size_t>(path_length, p.size() - kMinimum);
    std::string path(reinterpret_cast<const char*>(p.data() + p.size() - take), take);
    while (!path.empty() && path.back() == '\0') path.pop_back();
    s.module_path = std::move(path);
  } else if (s.new_state != kStateCommandString) {
    return absl::InvalidArgumentError(absl::StrCat("Unknown KD state change 0x", absl::Hex(s.new_state), "."));
  }
  const size_t r = kControlReportOffset;
  s.dr6 = get_u64(p, r + 0);
  s.dr7 = get_u64(p, r + 8);
  s.eflags = get_u32(p, r + 16);
  const uint16_t count = std::min<uint16_t>(get_u16(p, r + 20), kMaxInstructionStream);
  s.instruction_stream.assign(p.begin() + r + kControlReportStream, p.begin() + r + kControlReportStream + count);
  return s;
}

version_info decode_version(std::span<const uint8_t> u) {
  version_info v;
  v.major = get_u16(u, 0);
  v.minor = get_u16(u, 2);
  v.protocol = u.size() > 4 ? u[4] : 0;
  v.secondary = u.size() > 5 ? u[5] : 0;
  v.flags = get_u16(u, 6);
  v.machine = get_u16(u, 8);
  v.kernel_base = get_u64(u, 16);
  v.ps_loaded_module_list = get_u64(u, 24);
  v.debugger_data_list = get_u64(u, 32);
  return v;
}

}  // namespace toolhost::kd
