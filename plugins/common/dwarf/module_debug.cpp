#include "toolhost/dwarf/module_debug.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "toolhost/dwarf/dwarf_expression.hpp"

namespace toolhost::dwarf {

struct module_debug::state {
  std::string debuginfo_path;  // libdwfl's ":.debug:/usr/lib/debug:..." string
  char* debuginfo_path_ptr = nullptr;
  std::vector<std::string> cache_folders;  // debuginfod client cache layout: <folder>/<build-id>/debuginfo
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  mutable std::once_flag names_once;
  mutable std::map<std::string, symbol, std::less<>> by_name;
};

namespace {

int no_elf(Dwfl_Module*, void**, const char*, Dwarf_Addr, char**, Elf**) { return -1; }

// The debuginfod client's cache layout first, then libdwfl's own search (build-id links under
// the folders, then .gnu_debuglink by name).
int find_debuginfo(Dwfl_Module* mod, void** userdata, const char* modname, Dwarf_Addr base, const char* file_name,
                   const char* debuglink_file, GElf_Word debuglink_crc, char** debuginfo_file_name) {
  const unsigned char* bits = nullptr;
  GElf_Addr vaddr = 0;
  const int n = dwfl_module_build_id(mod, &bits, &vaddr);
  const auto* folders = userdata != nullptr ? static_cast<const std::vector<std::string>*>(*userdata) : nullptr;
  if (n > 0 && folders != nullptr) {
    std::string hex;
    for (int i = 0; i < n; ++i) {
      char b[3];
      std::snprintf(b, sizeof b, "%02x", bits[i]);
      hex += b;
    }
    for (const auto& folder : *folders) {
      const std::string path = folder + "/" + hex + "/debuginfo";
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd >= 0) {
        *debuginfo_file_name = strdup(path.c_str());
        return fd;
      }
    }
  }
  return dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                      debuginfo_file_name);
}

std::string attr_string(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  if (dwarf_attr_integrate(die, name, &attr) == nullptr) return "";
  const char* s = dwarf_formstring(&attr);
  return s != nullptr ? s : "";
}

std::optional<uint64_t> attr_unsigned(Dwarf_Die* die, unsigned name) {
  Dwarf_Attribute attr;
  Dwarf_Word v = 0;
  if (dwarf_attr(die, name, &attr) == nullptr || dwarf_formudata(&attr, &v) != 0) return std::nullopt;
  return v;
}

}  // namespace

module_debug::~module_debug() {
  if (state_ && state_->dwfl != nullptr) dwfl_end(state_->dwfl);
}

absl::Status module_debug::attach(const std::string& name, const std::string& path, int fd, uint64_t bias) {
  state_->callbacks.find_elf = no_elf;
  state_->callbacks.find_debuginfo = find_debuginfo;
  state_->callbacks.section_address = dwfl_offline_section_address;
  state_->debuginfo_path_ptr = state_->debuginfo_path.data();
  state_->callbacks.debuginfo_path = &state_->debuginfo_path_ptr;
  state_->dwfl = dwfl_begin(&state_->callbacks);
  if (state_->dwfl == nullptr) {
    if (fd >= 0) ::close(fd);
    return absl::InternalError(std::string("libdwfl: ") + dwfl_errmsg(-1));
  }
  dwfl_report_begin(state_->dwfl);
  state_->module = dwfl_report_elf(state_->dwfl, name.c_str(), path.c_str(), fd, bias, true);
  dwfl_report_end(state_->dwfl, nullptr, nullptr);
  if (state_->module == nullptr) return absl::InvalidArgumentError(path + ": " + dwfl_errmsg(-1));
  void** userdata = nullptr;
  dwfl_module_info(state_->module, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (userdata != nullptr) *userdata = &state_->cache_folders;
  name_ = name;
  Dwarf_Addr dwarf_bias = 0;
  dwarf_ = dwfl_module_getdwarf(state_->module, &dwarf_bias);
  const char* main_file = nullptr;
  const char* debug_file = nullptr;
  dwfl_module_info(state_->module, nullptr, nullptr, nullptr, nullptr, nullptr, &main_file, &debug_file);
  if (debug_file != nullptr && (main_file == nullptr || std::strcmp(debug_file, main_file) != 0)) {
    debug_file_ = debug_file;
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<module_debug>> module_debug::open(const std::string& path, uint64_t bias,
                                                                const search_paths& paths) {
  std::unique_ptr<module_debug> m(new module_debug());
  m->state_ = std::make_unique<state>();
  std::string dirs = ":.debug";
  bool system = false;
  for (const auto& f : paths.folders) {
    if (f.empty() || f[0] != '/') continue;  // build-id searches take absolute folders only
    dirs += ":" + f;
    m->state_->cache_folders.push_back(f);
    system = system || f == "/usr/lib/debug";
  }
  if (!system) dirs += ":/usr/lib/debug";
  m->state_->debuginfo_path = dirs;
  const size_t slash = path.rfind('/');
  if (auto s = m->attach(slash == std::string::npos ? path : path.substr(slash + 1), path, -1, bias); !s.ok()) return s;
  return m;
}

absl::StatusOr<std::unique_ptr<module_debug>> module_debug::open_image(const std::string& name, std::string image,
                                                                      uint64_t bias) {
  // libdwfl reads from a descriptor: give it an anonymous file holding the image.
  const int fd = memfd_create(name.c_str(), MFD_CLOEXEC);
  if (fd < 0) return absl::InternalError("memfd_create failed for " + name);
  size_t done = 0;
  while (done < image.size()) {
    const ssize_t n = ::write(fd, image.data() + done, image.size() - done);
    if (n <= 0) {
      ::close(fd);
      return absl::InternalError("could not stage the " + name + " image");
    }
    done += static_cast<size_t>(n);
  }
  std::unique_ptr<module_debug> m(new module_debug());
  m->state_ = std::make_unique<state>();
  m->state_->debuginfo_path = "-";
  if (auto s = m->attach(name, name, fd, bias); !s.ok()) return s;
  return m;
}

std::string module_debug::symbol_source() const {
  std::string text;
  const int symbols = dwfl_module_getsymtab(state_->module);
  Elf* elf = nullptr;
  GElf_Addr bias = 0;
  elf = dwfl_module_getelf(state_->module, &bias);
  bool full = false;
  if (elf != nullptr) {
    for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
      GElf_Shdr shdr;
      if (gelf_getshdr(scn, &shdr) != nullptr && shdr.sh_type == SHT_SYMTAB) full = true;
    }
  }
  if (!debug_file_.empty()) full = true;
  text = symbols <= 0 ? "no symbols" : full ? "symbols" : "export symbols";
  if (dwarf_ != nullptr) text += ", DWARF";
  if (!debug_file_.empty()) text += " (debug file " + debug_file_ + ")";
  return text;
}

std::optional<symbol> module_debug::symbol_at(uint64_t address) const {
  GElf_Off offset = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(state_->module, address, &offset, &sym, nullptr, nullptr, nullptr);
  if (name == nullptr) return std::nullopt;
  return symbol{name, address - offset, sym.st_size};
}

std::optional<symbol> module_debug::find_symbol(const std::string& name) const {
  std::call_once(state_->names_once, [this] {
    const int n = dwfl_module_getsymtab(state_->module);
    for (int i = 1; i < n; ++i) {
      GElf_Sym sym;
      GElf_Addr address = 0;
      const char* s = dwfl_module_getsym_info(state_->module, i, &sym, &address, nullptr, nullptr, nullptr);
      if (s == nullptr || *s == '\0' || address == 0) continue;
      const int type = GELF_ST_TYPE(sym.st_info);
      if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC && type != STT_NOTYPE) continue;
      // Global definitions win over local ones of the same name.
      auto [it, fresh] = state_->by_name.try_emplace(s, symbol{s, address, sym.st_size});
      if (!fresh && GELF_ST_BIND(sym.st_info) == STB_GLOBAL) it->second = symbol{s, address, sym.st_size};
    }
  });
  auto it = state_->by_name.find(name);
  if (it == state_->by_name.end()) return std::nullopt;
  return it->second;
}

std::vector<function_scope> module_debug::functions_at(uint64_t pc) const {
  std::vector<function_scope> out;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(state_->module, pc, &bias);
  if (cu == nullptr) return out;
  Dwarf_Die* scopes = nullptr;
  const int n = dwarf_getscopes(cu, pc - bias, &scopes);
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  const bool have_files = dwarf_getsrcfiles(cu, &files, &file_count) == 0;
  for (int i = 0; i < n; ++i) {
    Dwarf_Die* die = &scopes[i];
    const int tag = dwarf_tag(die);
    if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) continue;
    function_scope f;
    // gdb's name for a C function: its linkage name when the symbol differs from the source name
    // (glibc's __GI_raise for raise), else the source name; a mangled C++ name stays unshown.
    const std::string linkage = attr_string(die, DW_AT_linkage_name);
    f.name = !linkage.empty() && linkage.rfind("_Z", 0) != 0 ? linkage : attr_string(die, DW_AT_name);
    if (f.name.empty()) f.name = linkage;
    Dwarf_Addr entry = 0;
    if (dwarf_entrypc(die, &entry) == 0 || dwarf_lowpc(die, &entry) == 0) f.entry = entry + bias;
    f.inlined = tag == DW_TAG_inlined_subroutine;
    if (f.inlined) {
      auto file = attr_unsigned(die, DW_AT_call_file);
      auto line = attr_unsigned(die, DW_AT_call_line);
      if (file && line && have_files && *file < file_count) {
        const char* name = dwarf_filesrc(files, *file, nullptr, nullptr);
        if (name != nullptr) f.call_site = source_line{name, static_cast<int>(*line), 0};
      }
    }
    out.push_back(std::move(f));
    if (tag == DW_TAG_subprogram) break;
  }
  std::free(scopes);
  return out;
}

std::optional<source_line> module_debug::line_at(uint64_t pc) const {
  Dwfl_Line* line = dwfl_module_getsrc(state_->module, pc);
  if (line == nullptr) return std::nullopt;
  Dwarf_Addr address = 0;
  int number = 0;
  const char* file = dwfl_lineinfo(line, &address, &number, nullptr, nullptr, nullptr);
  if (file == nullptr || number <= 0) return std::nullopt;
  return source_line{file, number, address};
}

std::optional<unwind_result> module_debug::unwind_step(uint64_t pc, bool activation, const dwarf_registers& regs,
                                                       const memory_reader& memory) const {
  const uint64_t lookup = activation ? pc : pc - 1;
  Dwarf_Addr bias = 0;
  for (int which = 0; which < 2; ++which) {
    Dwarf_CFI* cfi = which == 0 ? dwfl_module_eh_cfi(state_->module, &bias) : dwfl_module_dwarf_cfi(state_->module, &bias);
    if (cfi == nullptr) continue;
    Dwarf_Frame* frame = nullptr;
    if (dwarf_cfi_addrframe(cfi, lookup - bias, &frame) != 0 || frame == nullptr) continue;
    std::unique_ptr<Dwarf_Frame, void (*)(void*)> owned(frame, std::free);
    unwind_result r;
    Dwarf_Addr start = 0, end = 0;
    dwarf_frame_info(frame, &start, &end, &r.signal_frame);
    expression_context context;
    context.read_register = [&](int n) -> std::optional<uint64_t> {
      return n >= 0 && n < dwarf_registers::kCount ? regs.value[n] : std::nullopt;
    };
    context.read_memory = memory;
    Dwarf_Op* ops = nullptr;
    size_t nops = 0;
    if (dwarf_frame_cfa(frame, &ops, &nops) != 0 || nops == 0) return std::nullopt;
    auto cfa = evaluate(std::span<const Dwarf_Op>(ops, nops), context);
    if (!cfa.ok() || cfa->what == location::kind::register_) return std::nullopt;
    r.cfa = cfa->value;
    context.cfa = r.cfa;
    for (int n = 0; n < dwarf_registers::kCount; ++n) {
      Dwarf_Op mem[3];
      ops = nullptr;
      nops = 0;
      if (dwarf_frame_register(frame, n, mem, &ops, &nops) != 0) continue;
      if (nops == 0) {
        if (ops == nullptr) r.caller.value[n] = regs.value[n];  // same value
        continue;                                                // undefined
      }
      auto where = evaluate(std::span<const Dwarf_Op>(ops, nops), context);
      if (!where.ok()) continue;
      if (where->what == location::kind::value) {
        r.caller.value[n] = where->value;
      } else if (where->what == location::kind::register_) {
        r.caller.value[n] = where->value < dwarf_registers::kCount ? regs.value[where->value] : std::nullopt;
      } else if (memory) {
        r.caller.value[n] = memory(where->value, 8);
      }
    }
    // The caller's stack pointer is the CFA unless a rule says otherwise.
    if (!r.caller.value[7]) r.caller.value[7] = r.cfa;
    return r;
  }
  return std::nullopt;
}

}  // namespace toolhost::dwarf
