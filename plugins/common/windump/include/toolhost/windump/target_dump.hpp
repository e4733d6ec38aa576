// `.dump /f FILE` for any debug target (debug_target.h): a full (type 1) Windows crash dump of
// the target's physical memory, with its registers as the context record and its hints (dtb,
// module_list_head, ps_active_process_head, kd_debugger_data_block, bugcheck) in the header.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <absl/status/statusor.h>
#include <toolhost/debug_target.h>
#include <toolhost/windump/dump_writer.hpp>

namespace toolhost::windump {

struct target_dump_options {
  std::string comment;
  // What to save. Empty: the target's describe hint "ram" ([{"start":"0x..","end":"0x.."}],
  // end exclusive), else probed: every 2 MiB below probe_limit whose first byte reads.
  std::vector<physical_range> ranges;
  uint64_t probe_limit = 4ull << 30;
  std::function<bool()> cancelled;  // polled between pages; may be empty
};

// Writes the dump (through write_full_dump: a temp file renamed into place). The target must
// be halted (the debugger's job) and offer TOOLHOST_DT_CAP_READ_PHYSICAL.
absl::StatusOr<full_dump_result> dump_target(toolhost_debug_target_t* target, const std::string& path,
                                             const target_dump_options& options = {});

}  // namespace toolhost::windump
