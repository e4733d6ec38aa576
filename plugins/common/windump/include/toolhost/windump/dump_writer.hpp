// Writes a full (type 1) 64-bit Windows crash dump of a target's physical memory: what the
// debugger's `.dump /f FILE` calls. The dump_reader of this library reads it back.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <toolhost/windump/dump_reader.hpp>

namespace toolhost::windump {

// A physical range to save, in bytes (rounded out to whole pages).
struct physical_range {
  uint64_t start = 0;
  uint64_t size = 0;
};

struct full_dump_request {
  std::vector<physical_range> ranges;  // what to save; the header's descriptor holds 42 runs,
                                       // so beyond that the smallest holes are saved as zeros
  uint64_t directory_table_base = 0;   // CR3 of the address space the dump describes
  uint64_t ps_loaded_module_list = 0;
  uint64_t ps_active_process_head = 0;
  uint64_t kd_debugger_data_block = 0;
  uint64_t pfn_database = 0;
  uint32_t number_processors = 1;
  uint32_t bugcheck_code = 0;
  std::array<uint64_t, 4> bugcheck_parameters{};
  uint32_t major_version = 15;  // "free build" as a Windows target reports it
  uint32_t minor_version = 0;
  amd64_context context;  // the current CPU's registers
  std::string comment;    // up to 127 bytes are kept
};

// Reads one whole page (4096 bytes) of physical memory at `address`.
using read_page_fn = std::function<absl::Status(uint64_t address, std::span<uint8_t> page)>;

struct full_dump_result {
  uint64_t pages_written = 0;
  uint64_t pages_unreadable = 0;  // written as zeros
  uint64_t bytes = 0;             // size of the file
};

// Streams the dump page by page into a temporary file (mode 0600) beside `path`, then renames
// it to `path`, so a failed write never leaves a half dump under that name. Pages `read_page`
// cannot read are written as zeros and counted. `cancelled` (may be empty) is polled between
// pages.
absl::StatusOr<full_dump_result> write_full_dump(const std::string& path, const full_dump_request& request,
                                                 const read_page_fn& read_page,
                                                 const std::function<bool()>& cancelled = {});

}  // namespace toolhost::windump
