// Where the Windows kernel keeps what the debugger reads: field offsets of _EPROCESS, _KTHREAD,
// _ETHREAD, the loader entries, the PEB and the PRCB, from the nt PDB's types when it is loaded,
// else the Windows 10 19041-19045 layout (the builds this table was checked against) so that a
// machine without symbols still lists processes. KDDEBUGGER_DATA64 is a published fixed layout.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <toolhost/types/type.hpp>

namespace toolhost::debugger::windows {

struct nt_layout {
  // _EPROCESS
  uint64_t eprocess_size = 0xa40;
  uint64_t process_dtb = 0x28;          // Pcb.DirectoryTableBase
  uint64_t process_user_dtb = 0x388;    // Pcb.UserDirectoryTableBase (KVA shadow)
  uint64_t process_thread_list = 0x30;  // Pcb.ThreadListHead (KTHREAD.ThreadListEntry)
  uint64_t unique_process_id = 0x440;
  uint64_t active_process_links = 0x448;
  uint64_t create_time = 0x468;
  uint64_t token = 0x4b8;
  uint64_t parent_pid = 0x540;  // InheritedFromUniqueProcessId
  uint64_t peb = 0x550;
  uint64_t session = 0x558;
  uint64_t object_table = 0x570;
  uint64_t image_file_name = 0x5a8;   // UCHAR[15]
  uint64_t thread_list_head = 0x5e0;  // ETHREAD.ThreadListEntry
  uint64_t active_threads = 0x5f0;
  uint64_t vad_root = 0x7d8;
  // _KTHREAD
  uint64_t kthread_stack_limit = 0x30, kthread_stack_base = 0x38, kthread_initial_stack = 0x28,
           kthread_kernel_stack = 0x58;
  uint64_t kthread_trap_frame = 0x90;
  uint64_t kthread_apc_process = 0xb8;  // ApcState.Process
  uint64_t kthread_priority = 0xc3;
  uint64_t kthread_teb = 0xf0;
  uint64_t kthread_state = 0x184;
  uint64_t kthread_wait_irql = 0x186, kthread_wait_mode = 0x187;
  uint64_t kthread_win32thread = 0x1c8;
  uint64_t kthread_process = 0x220;
  uint64_t kthread_base_priority = 0x233;
  uint64_t kthread_wait_reason = 0x283;
  uint64_t kthread_kernel_time = 0x28c, kthread_user_time = 0x2dc;
  uint64_t kthread_thread_list_entry = 0x2f8;
  // _ETHREAD
  uint64_t ethread_create_time = 0x430;
  uint64_t ethread_start_address = 0x450;
  uint64_t ethread_cid = 0x478;
  uint64_t ethread_win32_start_address = 0x4d0;
  uint64_t ethread_thread_list_entry = 0x4e8;
  // _KLDR_DATA_TABLE_ENTRY (kernel modules) and _LDR_DATA_TABLE_ENTRY (a process's)
  uint64_t ldr_dll_base = 0x30, ldr_size = 0x40, ldr_full_name = 0x48, ldr_base_name = 0x58;
  uint64_t kldr_checksum = 0x78, kldr_timestamp = 0x9c, ldr_timestamp = 0x80;
  // _PEB, _PEB_LDR_DATA
  uint64_t peb_image_base = 0x10, peb_ldr = 0x18, peb_session_id = 0x2c0;
  uint64_t ldr_in_load_order = 0x10;
  // _KPRCB, _KPCR
  uint64_t prcb_current_thread = 0x8, prcb_number = 0x24, kpcr_prcb = 0x180;

  bool from_pdb = false;  // false: the built-in 19041 table
  std::string note;       // what came from where, for vertarget
};

// The layout from `types` (nt's PDB); fields the PDB lacks keep the 19041 values, and `note` says
// which. Null `types`: the 19041 table.
nt_layout layout_from(const types::type_table* types);

// The offset of a member path ("Pcb.DirectoryTableBase") in the named type, through embedded
// structures; nullopt when the type or a member is missing.
std::optional<uint64_t> member_offset(const types::type_table& types, std::string_view type, std::string_view path);

// KDDEBUGGER_DATA64 (wdbgexts.h).
namespace kdbg {
inline constexpr uint32_t kOwnerTag = 0x4742444B;  // "KDBG"
inline constexpr uint64_t kOwnerTagOffset = 0x10, kSizeOffset = 0x14;
inline constexpr uint64_t kKernBase = 0x18;
inline constexpr uint64_t kPsLoadedModuleList = 0x48;
inline constexpr uint64_t kPsActiveProcessHead = 0x50;
inline constexpr uint64_t kPspCidTable = 0x58;
inline constexpr uint64_t kKiProcessorBlock = 0x218;
inline constexpr uint32_t kMaxSize = 0x4000;
}  // namespace kdbg

// KUSER_SHARED_DATA.
inline constexpr uint64_t kKuserSharedData = 0xfffff78000000000ull;
inline constexpr uint64_t kKuserNtBuildNumber = 0x260, kKuserNtProductType = 0x264, kKuserNtMajorVersion = 0x26c,
                          kKuserNtMinorVersion = 0x270, kKuserSystemTime = 0x14, kKuserImageNumberLow = 0x2c;

}  // namespace toolhost::debugger::windows
