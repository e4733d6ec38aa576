// DBGKD_ANY_WAIT_STATE_CHANGE (64-bit) and DBGKD_GET_VERSION64, decoded.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::kd {

struct state_change {
  uint32_t new_state = 0;  // kStateException, kStateLoadSymbols, kStateCommandString
  uint16_t processor_level = 0;
  uint16_t processor = 0;
  uint32_t processor_count = 0;
  uint64_t thread = 0;
  uint64_t pc = 0;
  // Exception (new_state == kStateException).
  uint32_t exception_code = 0;
  uint32_t exception_flags = 0;
  uint64_t exception_address = 0;
  std::vector<uint64_t> exception_parameters;
  uint32_t first_chance = 0;
  // Load symbols (new_state == kStateLoadSymbols).
  uint64_t module_base = 0;
  uint64_t module_process = 0;
  uint32_t module_size = 0;
  bool module_unload = false;
  std::string module_path;
  // AMD64 control report.
  uint64_t dr6 = 0;
  uint64_t dr7 = 0;
  uint32_t eflags = 0;
  std::vector<uint8_t> instruction_stream;
  // The packet as it came: a halted target repeats its report byte for byte (after RESET or
  // RESEND), so an equal `raw` is the same stop, not a new one.
  std::vector<uint8_t> raw;
};

absl::StatusOr<state_change> decode_state_change(std::span<const uint8_t> payload);

struct version_info {
  uint16_t major = 0;
  uint16_t minor = 0;
  uint8_t protocol = 0;
  uint8_t secondary = 0;
  uint16_t flags = 0;
  uint16_t machine = 0;
  uint64_t kernel_base = 0;
  uint64_t ps_loaded_module_list = 0;
  uint64_t debugger_data_list = 0;
};

version_info decode_version(std::span<const uint8_t> union_bytes);

}  // namespace toolhost::kd
