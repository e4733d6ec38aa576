#include "windows_layout.hpp"

#include <vector>

namespace toolhost::debugger::windows {

std::optional<uint64_t> member_offset(const types::type_table& table, std::string_view type, std::string_view path) {
  auto id = table.find(type);
  if (!id) return std::nullopt;
  uint64_t offset = 0;
  types::type_id current = types::strip_aliases(table, *id);
  size_t start = 0;
  while (start <= path.size()) {
    size_t dot = path.find('.', start);
    if (dot == std::string_view::npos) dot = path.size();
    const std::string_view name = path.substr(start, dot - start);
    if (current == types::kNoType) return std::nullopt;
    const types::type& t = table.get(current);
    // A member, also inside anonymous structures and unions (DWARF keeps those).
    std::optional<uint64_t> found;
    std::vector<std::pair<types::type_id, uint64_t>> stack = {{current, 0}};
    types::type_id next = types::kNoType;
    while (!stack.empty() && !found) {
      auto [tid, base] = stack.back();
      stack.pop_back();
      for (const auto& m : table.get(tid).members) {
        if (m.name == name) {
          found = base + m.offset;
          next = types::strip_aliases(table, m.type);
          break;
        }
        const types::type_id mt = types::strip_aliases(table, m.type);
        if (m.name.empty() && mt != types::kNoType &&
            (table.get(mt).k == types::kind::structure || table.get(mt).k == types::kind::union_)) {
          stack.push_back({mt, base + m.offset});
        }
      }
    }
    (void)t;
    if (!found) return std::nullopt;
    offset += *found;
    current = next;
    start = dot + 1;
  }
  return offset;
}

nt_layout layout_from(const types::type_table* types) {
  nt_layout l;
  if (types == nullptr) {
    l.note = "no nt PDB: the Windows 10 19041 layout";
    return l;
  }
  std::string missing;
  auto set = [&](uint64_t& field, std::string_view type, std::string_view path) {
    if (auto o = member_offset(*types, type, path)) {
      field = *o;
    } else {
      missing += std::string(missing.empty() ? "" : ", ") + std::string(type) + "." + std::string(path);
    }
  };
  if (auto ep = types->find("_EPROCESS")) l.eprocess_size = types->get(*ep).size;
  set(l.process_dtb, "_EPROCESS", "Pcb.DirectoryTableBase");
  set(l.process_user_dtb, "_EPROCESS", "Pcb.UserDirectoryTableBase");
  set(l.process_thread_list, "_EPROCESS", "Pcb.ThreadListHead");
  set(l.unique_process_id, "_EPROCESS", "UniqueProcessId");
  set(l.active_process_links, "_EPROCESS", "ActiveProcessLinks");
  set(l.create_time, "_EPROCESS", "CreateTime");
  set(l.token, "_EPROCESS", "Token");
  set(l.parent_pid, "_EPROCESS", "InheritedFromUniqueProcessId");
  set(l.peb, "_EPROCESS", "Peb");
  set(l.session, "_EPROCESS", "Session");
  set(l.object_table, "_EPROCESS", "ObjectTable");
  set(l.image_file_name, "_EPROCESS", "ImageFileName");
  set(l.thread_list_head, "_EPROCESS", "ThreadListHead");
  set(l.active_threads, "_EPROCESS", "ActiveThreads");
  set(l.vad_root, "_EPROCESS", "VadRoot");
  set(l.kthread_stack_limit, "_KTHREAD", "StackLimit");
  set(l.kthread_stack_base, "_KTHREAD", "StackBase");
  set(l.kthread_initial_stack, "_KTHREAD", "InitialStack");
  set(l.kthread_kernel_stack, "_KTHREAD", "KernelStack");
  set(l.kthread_trap_frame, "_KTHREAD", "TrapFrame");
  set(l.kthread_apc_process, "_KTHREAD", "ApcState.Process");
  set(l.kthread_priority, "_KTHREAD", "Priority");
  set(l.kthread_teb, "_KTHREAD", "Teb");
  set(l.kthread_state, "_KTHREAD", "State");
  set(l.kthread_wait_irql, "_KTHREAD", "WaitIrql");
  set(l.kthread_wait_mode, "_KTHREAD", "WaitMode");
  set(l.kthread_win32thread, "_KTHREAD", "Win32Thread");
  set(l.kthread_process, "_KTHREAD", "Process");
  set(l.kthread_base_priority, "_KTHREAD", "BasePriority");
  set(l.kthread_wait_reason, "_KTHREAD", "WaitReason");
  set(l.kthread_kernel_time, "_KTHREAD", "KernelTime");
  set(l.kthread_user_time, "_KTHREAD", "UserTime");
  set(l.kthread_thread_list_entry, "_KTHREAD", "ThreadListEntry");
  set(l.ethread_create_time, "_ETHREAD", "CreateTime");
  set(l.ethread_start_address, "_ETHREAD", "StartAddress");
  set(l.ethread_cid, "_ETHREAD", "Cid");
  set(l.ethread_win32_start_address, "_ETHREAD", "Win32StartAddress");
  set(l.ethread_thread_list_entry, "_ETHREAD", "ThreadListEntry");
  set(l.ldr_dll_base, "_KLDR_DATA_TABLE_ENTRY", "DllBase");
  set(l.ldr_size, "_KLDR_DATA_TABLE_ENTRY", "SizeOfImage");
  set(l.ldr_full_name, "_KLDR_DATA_TABLE_ENTRY", "FullDllName");
  set(l.ldr_base_name, "_KLDR_DATA_TABLE_ENTRY", "BaseDllName");
  set(l.kldr_checksum, "_KLDR_DATA_TABLE_ENTRY", "CheckSum");
  set(l.kldr_timestamp, "_KLDR_DATA_TABLE_ENTRY", "TimeDateStamp");
  set(l.ldr_timestamp, "_LDR_DATA_TABLE_ENTRY", "TimeDateStamp");
  set(l.peb_image_base, "_PEB", "ImageBaseAddress");
  set(l.peb_ldr, "_PEB", "Ldr");
  set(l.peb_session_id, "_PEB", "SessionId");
  set(l.ldr_in_load_order, "_PEB_LDR_DATA", "InLoadOrderModuleList");
  set(l.prcb_current_thread, "_KPRCB", "CurrentThread");
  set(l.prcb_number, "_KPRCB", "Number");
  set(l.kpcr_prcb, "_KPCR", "Prcb");
  l.from_pdb = true;
  l.note = missing.empty() ? "nt PDB" : "nt PDB (19041 offsets for what it lacks: " + missing + ")";
  return l;
}

}  // namespace toolhost::debugger::windows
