#include "toolhost/dwarf/module_debug.hpp"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <set>
#include <unordered_map>

#include "cfi_check.hpp"
#include "die_attributes.hpp"
#include "dwarf_types.hpp"
#include "toolhost/dwarf/dwarf_expression.hpp"

namespace toolhost::dwarf {

struct module_debug::state {
  std::string debuginfo_path;  // libdwfl's ":.debug:/usr/lib/debug:..." string
  char* debuginfo_path_ptr = nullptr;
  std::vector<std::string> cache_folders;  // debuginfod client cache layout: <folder>/<build-id>/debuginfo
  Dwfl_Callbacks callbacks{};
  Dwfl* dwfl = nullptr;
  Dwfl_Module* module = nullptr;
  bool symbols_made = false;
  std::vector<symbol> symbols;
  std::unique_ptr<die_type_table> types;
  std::unordered_map<std::string, uint64_t> function_by_name;  // for call sites naming a declaration
  std::unordered_map<uint64_t, uint64_t> function_size;        // by entry
  // Per CFI kind (.eh_frame, .debug_frame): unchecked, safe for libdw, or refused (cfi_check.hpp).
  enum class cfi_state { unchecked, usable, refused } cfi[2] = {cfi_state::unchecked, cfi_state::unchecked};
};

namespace {

constexpr int kRegSp = 7, kRegPc = 16;

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

bool is_function(int tag) { return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine; }

// gdb's name for a C function: its linkage name when the symbol differs from the source name
// (glibc's __GI_raise for raise), else the source name; a mangled C++ name stays unshown.
std::string function_name(Dwarf_Die* die) {
  const std::string linkage = string_attr(die, DW_AT_linkage_name);
  std::string name = !linkage.empty() && linkage.rfind("_Z", 0) != 0 ? linkage : string_attr(die, DW_AT_name);
  return name.empty() ? linkage : name;
}

// The DWARF scopes at `address` (a file address with `bias` applied by libdwfl), innermost first;
// freed by the caller.
struct scopes {
  Dwarf_Die* dies = nullptr;
  int count = 0;
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = nullptr;
  ~scopes() { std::free(dies); }
};

void scopes_at(Dwfl_Module* module, uint64_t pc, scopes& out) {
  out.cu = dwfl_module_addrdie(module, pc, &out.bias);
  if (out.cu == nullptr) return;
  out.count = std::max(0, dwarf_getscopes(out.cu, pc - out.bias, &out.dies));
}

// The out-of-line function among the scopes; for code gcc describes by an inlined subroutine
// straight under the unit (an alias whose whole body is another function inlined), that one.
Dwarf_Die* outer_function(scopes& s) {
  for (int i = 0; i < s.count; ++i) {
    if (dwarf_tag(&s.dies[i]) == DW_TAG_subprogram) return &s.dies[i];
  }
  for (int i = s.count - 1; i >= 0; --i) {
    if (dwarf_tag(&s.dies[i]) == DW_TAG_inlined_subroutine) return &s.dies[i];
  }
  return nullptr;
}

// The file address of the lowest loadable page: what the module's base stands for.
uint64_t lowest_load(Elf* elf) {
  size_t count = 0;
  if (elf == nullptr || elf_getphdrnum(elf, &count) != 0) return 0;
  uint64_t low = UINT64_MAX;
  for (size_t i = 0; i < count && i < 4096; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf, static_cast<int>(i), &phdr) != nullptr && phdr.p_type == PT_LOAD) {
      low = std::min<uint64_t>(low, phdr.p_vaddr & ~uint64_t{0xfff});
    }
  }
  return low == UINT64_MAX ? 0 : low;
}

void append_le(std::string& out, uint64_t v, uint64_t size) {
  for (uint64_t i = 0; i < size; ++i) out += static_cast<char>(i < 8 ? (v >> (8 * i)) & 0xff : 0);
}

}  // namespace

module_debug::module_debug() = default;

module_debug::~module_debug() {
  if (state_ && state_->dwfl != nullptr) dwfl_end(state_->dwfl);
}

absl::Status module_debug::attach(const std::string& name, const std::string& path, int fd, uint64_t load_base) {
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
  uint64_t low = 0;
  {
    const int probe = fd >= 0 ? fd : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (probe < 0) return absl::NotFoundError(path + ": " + std::strerror(errno));
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(probe, ELF_C_READ_MMAP, nullptr);
    low = lowest_load(elf);
    if (elf != nullptr) elf_end(elf);
    if (probe != fd) ::close(probe);
  }
  dwfl_report_begin(state_->dwfl);
  state_->module = dwfl_report_elf(state_->dwfl, name.c_str(), path.c_str(), fd, load_base - low, true);
  dwfl_report_end(state_->dwfl, nullptr, nullptr);
  if (state_->module == nullptr) return absl::InvalidArgumentError(path + ": " + dwfl_errmsg(-1));
  void** userdata = nullptr;
  dwfl_module_info(state_->module, &userdata, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr);
  if (userdata != nullptr) *userdata = &state_->cache_folders;
  file_ = path;
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

absl::StatusOr<std::unique_ptr<module_debug>> module_debug::open(const std::string& path, uint64_t load_base,
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
  if (auto s = m->attach(slash == std::string::npos ? path : path.substr(slash + 1), path, -1, load_base); !s.ok())
    return s;
  return m;
}

absl::StatusOr<std::unique_ptr<module_debug>> module_debug::open_image(const std::string& name, std::string image,
                                                                       uint64_t load_base) {
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
  if (auto s = m->attach(name, name, fd, load_base); !s.ok()) return s;
  m->file_.clear();
  return m;
}

bool module_debug::full_symbols() const {
  if (!debug_file_.empty()) return true;
  GElf_Addr bias = 0;
  Elf* elf = dwfl_module_getelf(state_->module, &bias);
  if (elf == nullptr) return false;
  for (Elf_Scn* scn = nullptr; (scn = elf_nextscn(elf, scn)) != nullptr;) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) != nullptr && shdr.sh_type == SHT_SYMTAB) return true;
  }
  return false;
}

const std::vector<symbol>& module_debug::symbols() const {
  if (state_->symbols_made) return state_->symbols;
  state_->symbols_made = true;
  const int n = dwfl_module_getsymtab(state_->module);
  for (int i = 1; i < n; ++i) {
    GElf_Sym sym;
    GElf_Addr address = 0;
    const char* s = dwfl_module_getsym_info(state_->module, i, &sym, &address, nullptr, nullptr, nullptr);
    if (s == nullptr || *s == '\0' || address == 0 || sym.st_shndx == SHN_UNDEF) continue;
    const int type = GELF_ST_TYPE(sym.st_info);
    if (type != STT_FUNC && type != STT_OBJECT && type != STT_GNU_IFUNC && type != STT_NOTYPE && type != STT_TLS)
      continue;
    state_->symbols.push_back({s, address, sym.st_size, type == STT_FUNC || type == STT_GNU_IFUNC});
  }
  std::stable_sort(state_->symbols.begin(), state_->symbols.end(),
                   [](const symbol& a, const symbol& b) { return a.address < b.address; });
  return state_->symbols;
}

std::optional<symbol> module_debug::symbol_at(uint64_t address) const {
  GElf_Off offset = 0;
  GElf_Sym sym;
  const char* name = dwfl_module_addrinfo(state_->module, address, &offset, &sym, nullptr, nullptr, nullptr);
  if (name == nullptr) return std::nullopt;
  const int type = GELF_ST_TYPE(sym.st_info);
  return symbol{name, address - offset, sym.st_size, type == STT_FUNC || type == STT_GNU_IFUNC};
}

std::vector<function_scope> module_debug::functions_at(uint64_t pc) const {
  std::vector<function_scope> out;
  scopes s;
  scopes_at(state_->module, pc, s);
  if (s.count == 0) return out;
  Dwarf_Files* files = nullptr;
  size_t file_count = 0;
  const bool have_files = dwarf_getsrcfiles(s.cu, &files, &file_count) == 0;
  for (int i = 0; i < s.count; ++i) {
    Dwarf_Die* die = &s.dies[i];
    const int tag = dwarf_tag(die);
    if (!is_function(tag)) continue;
    function_scope f;
    f.name = function_name(die);
    Dwarf_Addr entry = 0;
    if (dwarf_entrypc(die, &entry) == 0 || dwarf_lowpc(die, &entry) == 0) f.entry = entry + s.bias;
    f.inlined = tag == DW_TAG_inlined_subroutine;
    if (f.inlined) {
      auto file = unsigned_attr(die, DW_AT_call_file);
      auto line = unsigned_attr(die, DW_AT_call_line);
      if (file && line && have_files && *file < file_count) {
        const char* name = dwarf_filesrc(files, *file, nullptr, nullptr);
        if (name != nullptr) f.call_site = source_line{name, static_cast<int>(*line), 0};
      }
    }
    out.push_back(std::move(f));
    if (tag == DW_TAG_subprogram) break;
  }
  return out;
}

std::optional<source_line> module_debug::line_at(uint64_t pc) const {
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(state_->module, pc, &bias);
  Dwarf_Lines* lines = nullptr;
  size_t count = 0;
  if (cu == nullptr || dwarf_getsrclines(cu, &lines, &count) != 0 || count == 0) return std::nullopt;
  auto address_of = [&](size_t i) {
    Dwarf_Addr a = 0;
    dwarf_lineaddr(dwarf_onesrcline(lines, i), &a);
    return a;
  };
  // libdw sorts the rows by address. The last row at or below the pc ...
  const Dwarf_Addr at = pc - bias;
  size_t lo = 0, hi = count;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (address_of(mid) <= at)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return std::nullopt;
  size_t best = lo - 1;
  auto row = [&](size_t i) { return dwarf_onesrcline(lines, i); };
  auto line_number = [&](size_t i) {
    int n = 0;
    dwarf_lineno(row(i), &n);
    return n;
  };
  auto flag = [&](size_t i, int (*get)(Dwarf_Line*, bool*)) {
    bool v = false;
    get(row(i), &v);
    return v;
  };
  if (flag(best, dwarf_lineendsequence)) return std::nullopt;  // past the end of a sequence
  // ... skipping rows of line 0 (gdb drops them) ...
  const Dwarf_Addr group = address_of(best);
  while (best > 0 && line_number(best) == 0 && address_of(best - 1) == group) --best;
  if (line_number(best) == 0) return std::nullopt;
  // ... and, as gdb does, preferring a statement row at the same address when the last one is
  // not a statement (gcc's location views put several rows at one address).
  if (!flag(best, dwarf_linebeginstatement)) {
    size_t k = best;
    while (k > 0 && address_of(k - 1) == group && line_number(k - 1) != 0 && !flag(k, dwarf_linebeginstatement)) --k;
    if (flag(k, dwarf_linebeginstatement)) best = k;
  }
  const char* file = dwarf_linesrc(row(best), nullptr, nullptr);
  if (file == nullptr) return std::nullopt;
  return source_line{file, line_number(best), group + bias};
}

namespace {

// The section called `name` of `elf` and how many there are (with two, which one libdw reads
// depends on where .eh_frame_hdr sits among them).
struct named_section {
  Elf_Data* data = nullptr;
  uint64_t address = 0;
  int count = 0;
};
named_section section_named(Elf* elf, const char* name) {
  named_section found;
  size_t names = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &names) != 0) return found;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr header;
    if (gelf_getshdr(scn, &header) == nullptr || header.sh_type == SHT_NOBITS) continue;
    const char* n = elf_strptr(elf, names, header.sh_name);
    if (n == nullptr || std::strcmp(n, name) != 0) continue;
    // libdw reads .eh_frame raw, and .debug_frame after decompressing it in place.
    found.data = std::strcmp(name, ".debug_frame") == 0 ? elf_getdata(scn, nullptr) : elf_rawdata(scn, nullptr);
    found.address = header.sh_addr;
    ++found.count;
  }
  return found;
}

}  // namespace

bool module_debug::cfi_usable(int which) const {
  using cfi_state = module_debug::state::cfi_state;
  auto& checked = state_->cfi[which];
  if (checked == cfi_state::unchecked) {
    Dwarf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(state_->module, &bias);
    if (which == 1) {
      // .debug_frame is read from the debug file when there is one.
      if (Dwarf* d = dwfl_module_getdwarf(state_->module, &bias); d != nullptr && dwarf_getelf(d) != nullptr) {
        elf = dwarf_getelf(d);
      }
    }
    // CFI that libdw found somewhere this cannot read (no section headers, a .zdebug name) is
    // not checked, so not used either.
    bool bounded = false;
    const char* ident = elf != nullptr ? elf_getident(elf, nullptr) : nullptr;
    const named_section section = section_named(elf, which == 0 ? ".eh_frame" : ".debug_frame");
    const named_section hdr = which == 0 ? section_named(elf, ".eh_frame_hdr") : named_section{};
    if (ident != nullptr && section.count == 1 && section.data != nullptr && section.data->d_buf != nullptr &&
        hdr.count <= 1) {
      cfi_section cfi{reinterpret_cast<const unsigned char*>(ident),
                      section.data,
                      which == 0,
                      section.address,
                      hdr.data,
                      hdr.address};
      bounded = cfi_registers_bounded(cfi);
    }
    checked = bounded ? cfi_state::usable : cfi_state::refused;
  }
  return checked == cfi_state::usable;
}

std::optional<unwind_result> module_debug::unwind_step(uint64_t pc, bool activation, const dwarf_registers& regs,
                                                       const memory_reader& memory) const {
  const uint64_t lookup = activation ? pc : pc - 1;
  Dwarf_Addr bias = 0;
  for (int which = 0; which < 2; ++which) {
    Dwarf_CFI* cfi =
        which == 0 ? dwfl_module_eh_cfi(state_->module, &bias) : dwfl_module_dwarf_cfi(state_->module, &bias);
    if (cfi == nullptr || !cfi_usable(which)) continue;
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
    // The CFA rule is a DWARF expression (a value), never a location of its own.
    if (!cfa.ok() || cfa->what != location::kind::memory) return std::nullopt;
    r.cfa = cfa->value;
    context.cfa = r.cfa;
    for (int n = 0; n < dwarf_registers::kCount; ++n) {
      Dwarf_Op mem[3];
      ops = nullptr;
      nops = 0;
      if (dwarf_frame_register(frame, n, mem, &ops, &nops) != 0) continue;
      if (nops == 0) {
        // Same value, or no rule. As gdb does, a register the CFI leaves without a rule keeps
        // the callee's value (libdw's x86-64 defaults call rbx undefined, which GCC's CFI never
        // means); only the return address, undefined in the outermost frame, ends the walk.
        if (ops == nullptr || n != kRegPc) r.caller.value[n] = regs.value[n];
        continue;
      }
      auto where = evaluate(std::span<const Dwarf_Op>(ops, nops), context);
      if (!where.ok()) continue;
      if (where->what == location::kind::value) {
        r.caller.value[n] = where->value;
      } else if (where->what == location::kind::register_) {
        r.caller.value[n] = where->value < dwarf_registers::kCount ? regs.value[where->value] : std::nullopt;
      } else if (where->what == location::kind::memory && memory) {
        r.caller.value[n] = memory(where->value, 8);
      }
    }
    // The caller's stack pointer is the CFA unless a rule says otherwise.
    if (!r.caller.value[kRegSp]) r.caller.value[kRegSp] = r.cfa;
    return r;
  }
  return std::nullopt;
}

const types::type_table* module_debug::types() const {
  if (dwarf_ == nullptr) return nullptr;
  if (!state_->types) {
    GElf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(state_->module, &bias);
    const uint32_t pointer_size = elf != nullptr && gelf_getclass(elf) == ELFCLASS32 ? 4 : 8;
    state_->types = std::make_unique<die_type_table>(static_cast<Dwarf*>(dwarf_), pointer_size);
  }
  return state_->types.get();
}

namespace {

// One frame's evaluation context: its registers, its CFA and its function's frame base.
struct frame_context {
  const frame_view* frame = nullptr;
  const module_debug* module = nullptr;
  const memory_reader* memory = nullptr;
  uint64_t lookup = 0;  // pc, or pc - 1 for a return address
  std::optional<uint64_t> cfa;
  std::optional<uint64_t> frame_base;
};

absl::StatusOr<location> evaluate_attribute(Dwarf_Attribute* attr, Dwarf_Addr file_pc, const frame_context& f,
                                            int depth);

// What the caller passed for the parameter that was in DWARF register `reg` at the entry: the
// DW_AT_call_value of the call site's parameter in that register, evaluated in the caller.
std::optional<uint64_t> call_site_value(const frame_context& callee, int reg, int depth);

expression_context context_for(const frame_context& f, Dwarf_Attribute* attr, int depth) {
  expression_context c;
  c.read_register = [fr = f.frame](int n) -> std::optional<uint64_t> {
    return n >= 0 && n < dwarf_registers::kCount ? fr->regs.value[n] : std::nullopt;
  };
  c.read_memory = *f.memory;
  c.cfa = f.cfa;
  c.frame_base = f.frame_base;
  c.implicit_value = [attr](const Dwarf_Op& op) -> std::optional<std::string> {
    Dwarf_Block block;
    if (attr == nullptr || dwarf_getlocation_implicit_value(attr, &op, &block) != 0) return std::nullopt;
    return std::string(reinterpret_cast<const char*>(block.data), block.length);
  };
  c.entry_value = [attr, &f, depth](const Dwarf_Op& op) -> std::optional<uint64_t> {
    Dwarf_Attribute inner;
    Dwarf_Op* ops = nullptr;
    size_t n = 0;
    if (attr == nullptr || dwarf_getlocation_attr(attr, &op, &inner) != 0 || dwarf_getlocation(&inner, &ops, &n) != 0 ||
        n != 1) {
      return std::nullopt;
    }
    int reg = -1;
    if (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31) reg = ops[0].atom - DW_OP_reg0;
    if (ops[0].atom == DW_OP_regx && ops[0].number < 64) reg = static_cast<int>(ops[0].number);
    if (reg < 0) return std::nullopt;
    return call_site_value(f, reg, depth + 1);
  };
  return c;
}

absl::StatusOr<location> evaluate_attribute(Dwarf_Attribute* attr, Dwarf_Addr file_pc, const frame_context& f,
                                            int depth) {
  Dwarf_Op* expr = nullptr;
  size_t len = 0;
  const int n = dwarf_getlocation_addr(attr, file_pc, &expr, &len, 1);
  if (n < 0) return absl::InvalidArgumentError(std::string("unreadable location: ") + dwarf_errmsg(-1));
  if (n == 0) return location{};  // not live at this pc
  return evaluate(std::span<const Dwarf_Op>(expr, len), context_for(f, attr, depth));
}

// The frame's CFA (from CFI) and its function's DW_AT_frame_base.
void complete_context(frame_context& f, Dwarf_Die* function, Dwarf_Addr bias, const memory_reader& memory, int depth) {
  if (auto step = f.module->unwind_step(f.frame->pc, f.frame->activation, f.frame->regs, memory)) f.cfa = step->cfa;
  Dwarf_Attribute attr;
  if (function != nullptr && dwarf_attr_integrate(function, DW_AT_frame_base, &attr) != nullptr) {
    if (auto base = evaluate_attribute(&attr, f.lookup - bias, f, depth); base.ok()) {
      if (base->what == location::kind::memory || base->what == location::kind::value) {
        f.frame_base = base->value;
      } else if (base->what == location::kind::register_ && base->value < dwarf_registers::kCount) {
        f.frame_base = f.frame->regs.value[base->value];
      }
    }
  }
}

}  // namespace

// Reaches module_debug's privates for the call-site search without widening the public header.
struct call_site_access {
  static Dwfl_Module* module(const module_debug& m);
};

Dwfl_Module* call_site_access::module(const module_debug& m) { return m.state_->module; }

namespace {

// Calls `visit` for each call site under `function` (through its lexical blocks, inlined code
// and nested functions) until it returns false.
template <typename Visit>
void for_each_call_site(Dwarf_Die* function, Visit&& visit) {
  std::vector<Dwarf_Die> pending;
  Dwarf_Die child;
  if (dwarf_child(function, &child) == 0) pending.push_back(child);
  for (int visited = 0; !pending.empty() && visited < 100000; ++visited) {
    Dwarf_Die d = pending.back();
    pending.pop_back();
    Dwarf_Die sibling = d;
    if (dwarf_siblingof(&sibling, &sibling) == 0) pending.push_back(sibling);
    const int tag = dwarf_tag(&d);
    if (tag == DW_TAG_call_site || tag == DW_TAG_GNU_call_site) {
      if (!visit(d)) return;
      continue;
    }
    if (tag == DW_TAG_lexical_block || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram) {
      Dwarf_Die inner;
      if (dwarf_child(&d, &inner) == 0) pending.push_back(inner);
    }
  }
}

// The address after the call (DWARF 5's DW_AT_call_return_pc, the GNU extension's low_pc).
std::optional<uint64_t> site_return_pc(Dwarf_Die* site) {
  if (auto at = address_attr(site, DW_AT_call_return_pc)) return at;
  return address_attr(site, DW_AT_low_pc);
}

bool is_tail_call(Dwarf_Die* site) {
  return flag_attr(site, DW_AT_call_tail_call) || flag_attr(site, DW_AT_GNU_tail_call);
}

std::optional<uint64_t> call_site_value(const frame_context& callee, int reg, int depth) {
  if (depth > 16) return std::nullopt;  // entry values through at most 16 callers
  const frame_view* caller = callee.frame->caller;
  const module_debug* module = callee.frame->caller_module;
  if (caller == nullptr || module == nullptr || caller->activation) return std::nullopt;
  scopes s;
  const uint64_t lookup = caller->pc - 1;
  scopes_at(call_site_access::module(*module), lookup, s);
  Dwarf_Die* function = outer_function(s);
  if (function == nullptr) return std::nullopt;
  const uint64_t return_pc = caller->pc - s.bias;
  Dwarf_Die site{};
  for_each_call_site(function, [&](Dwarf_Die& d) {
    if (site_return_pc(&d) != return_pc) return true;
    site = d;
    return false;
  });
  Dwarf_Die child;
  if (site.addr == nullptr || dwarf_child(&site, &child) != 0) return std::nullopt;
  frame_context f;
  f.frame = caller;
  f.module = module;
  f.memory = callee.memory;
  f.lookup = lookup;
  complete_context(f, function, s.bias, *callee.memory, depth);
  do {
    const int tag = dwarf_tag(&child);
    if (tag != DW_TAG_call_site_parameter && tag != DW_TAG_GNU_call_site_parameter) continue;
    Dwarf_Attribute where;
    Dwarf_Op* ops = nullptr;
    size_t n = 0;
    if (dwarf_attr(&child, DW_AT_location, &where) == nullptr || dwarf_getlocation(&where, &ops, &n) != 0 || n != 1)
      continue;
    const bool same =
        (ops[0].atom == DW_OP_reg0 + reg) || (ops[0].atom == DW_OP_regx && ops[0].number == static_cast<uint64_t>(reg));
    if (!same) continue;
    Dwarf_Attribute value;
    if (dwarf_attr(&child, DW_AT_call_value, &value) == nullptr &&
        dwarf_attr(&child, DW_AT_GNU_call_site_value, &value) == nullptr) {
      return std::nullopt;
    }
    auto v = evaluate_attribute(&value, lookup - s.bias, f, depth);
    if (!v.ok()) return std::nullopt;
    if (v->what == location::kind::memory) return v->value;  // a DWARF expression: its value
    if (v->what == location::kind::value) return v->value;
    if (v->what == location::kind::register_ && v->value < dwarf_registers::kCount) return caller->regs.value[v->value];
    return std::nullopt;
  } while (dwarf_siblingof(&child, &child) == 0);
  return std::nullopt;
}

// The value's bytes (or its address) from where the location says it is.
void materialize(const location& where, uint64_t size, const frame_view& frame, const memory_reader& memory,
                 variable& v) {
  auto unavailable = [&](std::string why) {
    v.where = variable::state::unavailable;
    v.problem = std::move(why);
  };
  auto register_bytes = [&](uint64_t reg, uint64_t n, std::string& out) -> bool {
    if (reg >= dwarf_registers::kCount || !frame.regs.value[reg]) {
      unavailable("register " + std::to_string(reg) + " is not known in this frame");
      return false;
    }
    append_le(out, *frame.regs.value[reg], n);
    return true;
  };
  auto memory_bytes = [&](uint64_t address, uint64_t n, std::string& out) -> bool {
    for (uint64_t done = 0; done < n;) {
      const int chunk = static_cast<int>(std::min<uint64_t>(8, n - done));
      auto word = memory ? memory(address + done, chunk) : std::nullopt;
      if (!word) {
        unavailable("memory it is in is not readable");
        return false;
      }
      append_le(out, *word, static_cast<uint64_t>(chunk));
      done += static_cast<uint64_t>(chunk);
    }
    return true;
  };
  switch (where.what) {
    case location::kind::memory:
      v.where = variable::state::memory;
      v.address = where.value;
      return;
    case location::kind::register_:
      v.where = variable::state::bytes;
      if (!register_bytes(where.value, std::min<uint64_t>(size, 8), v.bytes)) return;
      break;
    case location::kind::value:
      v.where = variable::state::bytes;
      append_le(v.bytes, where.value, std::min<uint64_t>(size, 8));
      break;
    case location::kind::implicit:
      v.where = variable::state::bytes;
      v.bytes = where.bytes;
      break;
    case location::kind::unavailable: unavailable("optimized out"); return;
    case location::kind::composite:
      v.where = variable::state::bytes;
      for (const auto& p : where.pieces) {
        const uint64_t n = std::min<uint64_t>(p.size, 4096);
        switch (p.where.what) {
          case location::kind::register_:
            if (!register_bytes(p.where.value, std::min<uint64_t>(n, 8), v.bytes)) return;
            if (n > 8) v.bytes.append(n - 8, '\0');
            break;
          case location::kind::memory:
            if (!memory_bytes(p.where.value, n, v.bytes)) return;
            break;
          case location::kind::value: append_le(v.bytes, p.where.value, n); break;
          case location::kind::implicit: v.bytes += p.where.bytes.substr(0, n); break;
          default: unavailable("optimized out"); return;
        }
      }
      break;
  }
  if (v.bytes.size() < size) v.bytes.append(size - v.bytes.size(), '\0');
  if (v.bytes.size() > size && size > 0) v.bytes.resize(size);
}

}  // namespace

std::vector<variable> module_debug::variables(const frame_view& frame, const memory_reader& memory) const {
  std::vector<variable> out;
  const uint64_t lookup = frame.activation ? frame.pc : frame.pc - 1;
  scopes s;
  scopes_at(state_->module, lookup, s);
  if (s.count == 0) return out;
  // The scopes of the frame's function: those after the inline_depth-th function scope, up to
  // and including the next one.
  int first = 0, functions = 0, last = -1;
  for (int i = 0; i < s.count; ++i) {
    if (!is_function(dwarf_tag(&s.dies[i]))) continue;
    if (functions == static_cast<int>(frame.inline_depth)) {
      last = i;
      break;
    }
    ++functions;
    first = i + 1;
  }
  if (last < 0) return out;
  Dwarf_Die* outermost = nullptr;  // the out-of-line function: its frame base serves inlined code too
  for (int i = last; i < s.count && outermost == nullptr; ++i) {
    if (dwarf_tag(&s.dies[i]) == DW_TAG_subprogram) outermost = &s.dies[i];
  }
  frame_context f;
  f.frame = &frame;
  f.module = this;
  f.memory = &memory;
  f.lookup = lookup;
  complete_context(f, outermost, s.bias, memory, 0);
  const auto* table = static_cast<const die_type_table*>(types());
  std::vector<variable> parameters, locals;
  for (int i = first; i <= last; ++i) {
    Dwarf_Die child;
    if (dwarf_child(&s.dies[i], &child) != 0) continue;
    do {
      const int tag = dwarf_tag(&child);
      if (tag != DW_TAG_variable && tag != DW_TAG_formal_parameter) continue;
      if (tag == DW_TAG_formal_parameter && i != last) continue;
      variable v;
      const char* name = dwarf_diename(&child);
      if (name == nullptr) continue;  // artificial, unnamed
      v.name = name;
      v.parameter = tag == DW_TAG_formal_parameter;
      v.type = table != nullptr ? table->type_of(&child) : types::kNoType;
      const uint64_t size = table != nullptr ? table->get(types::strip_aliases(*table, v.type)).size : 0;
      Dwarf_Attribute attr;
      if (dwarf_attr(&child, DW_AT_location, &attr) != nullptr) {
        auto where = evaluate_attribute(&attr, lookup - s.bias, f, 0);
        if (where.ok()) {
          materialize(*where, size, frame, memory, v);
        } else {
          v.problem = std::string(where.status().message());
        }
      } else if (dwarf_attr_integrate(&child, DW_AT_const_value, &attr) != nullptr) {
        Dwarf_Block block;
        Dwarf_Sword value = 0;
        v.where = variable::state::bytes;
        if (dwarf_formblock(&attr, &block) == 0) {
          v.bytes.assign(reinterpret_cast<const char*>(block.data), block.length);
        } else if (dwarf_formsdata(&attr, &value) == 0) {
          append_le(v.bytes, static_cast<uint64_t>(value), std::min<uint64_t>(size, 8));
        } else {
          v.where = variable::state::unavailable;
          v.problem = "optimized out";
        }
      } else {
        v.problem = "optimized out";
      }
      (v.parameter ? parameters : locals).push_back(std::move(v));
      if (parameters.size() + locals.size() >= 4096) break;
    } while (dwarf_siblingof(&child, &child) == 0);
  }
  out = std::move(parameters);
  for (auto& l : locals) out.push_back(std::move(l));
  return out;
}

namespace {

// The entry of the function a call site calls: its origin's entry, else (a declaration) the
// symbol of its name.
std::optional<uint64_t> site_target(Dwarf_Die* site, Dwarf_Addr bias,
                                    const std::unordered_map<std::string, uint64_t>& by_name) {
  Dwarf_Attribute attr;
  Dwarf_Die origin;
  if ((dwarf_attr(site, DW_AT_call_origin, &attr) == nullptr &&
       dwarf_attr(site, DW_AT_abstract_origin, &attr) == nullptr) ||
      dwarf_formref_die(&attr, &origin) == nullptr) {
    return std::nullopt;
  }
  Dwarf_Addr entry = 0;
  if (dwarf_entrypc(&origin, &entry) == 0 || dwarf_lowpc(&origin, &entry) == 0) return entry + bias;
  for (unsigned which : {DW_AT_linkage_name, DW_AT_name}) {
    const std::string name = string_attr(&origin, which);
    if (auto it = by_name.find(name); !name.empty() && it != by_name.end()) return it->second;
  }
  return std::nullopt;
}

}  // namespace

std::vector<uint64_t> module_debug::tail_calls(uint64_t return_pc, uint64_t callee_entry) const {
  if (dwarf_ == nullptr) return {};
  if (state_->function_by_name.empty()) {
    for (const auto& sym : symbols()) {
      if (!sym.function) continue;
      state_->function_by_name.try_emplace(sym.name, sym.address);
      if (sym.size != 0) state_->function_size.try_emplace(sym.address, sym.size);
    }
  }
  const auto& by_name = state_->function_by_name;
  // The subprogram holding `pc` and its bias.
  auto function_at = [this](uint64_t pc, scopes& s) -> Dwarf_Die* {
    scopes_at(state_->module, pc, s);
    return outer_function(s);
  };
  scopes caller;
  Dwarf_Die* function = function_at(return_pc - 1, caller);
  if (function == nullptr) return {};
  std::optional<uint64_t> first;
  for_each_call_site(function, [&](Dwarf_Die& d) {
    if (site_return_pc(&d) != return_pc - caller.bias) return true;
    first = site_target(&d, caller.bias, by_name);
    return false;
  });
  if (!first || *first == callee_entry) return {};
  // Every chain of tail calls from `first` to the callee, as the sites' return addresses from
  // the caller's side down; bounded in depth and in functions looked at.
  std::vector<std::vector<uint64_t>> chains;
  std::vector<uint64_t> chain;
  std::set<uint64_t> on_chain{*first};
  int looked_at = 0;
  std::function<void(uint64_t)> search = [&](uint64_t entry) {
    if (chain.size() >= 8 || ++looked_at > 256 || chains.size() >= 16) return;
    // The tail calls of the function at `entry`: the call sites whose return address lies in
    // its symbol's extent (gcc may describe part of a function by DIEs outside any subprogram),
    // else those under its DWARF function.
    scopes s;
    Dwarf_Die* f = function_at(entry, s);
    if (f == nullptr) return;
    auto extent = state_->function_size.find(entry);
    Dwarf_Die* where = extent != state_->function_size.end() && s.count > 0 ? s.cu : f;
    std::vector<std::pair<uint64_t, uint64_t>> sites;  // (return address, target)
    for_each_call_site(where, [&](Dwarf_Die& d) {
      if (!is_tail_call(&d)) return true;
      auto rp = site_return_pc(&d);
      if (!rp) return true;
      const uint64_t at = *rp + s.bias;
      if (where == s.cu && (at <= entry || at - entry > extent->second)) return true;
      if (auto target = site_target(&d, s.bias, by_name)) sites.emplace_back(at, *target);
      return true;
    });
    for (const auto& [rp, target] : sites) {
      chain.push_back(rp);
      if (target == callee_entry) {
        chains.push_back(chain);
      } else if (on_chain.insert(target).second) {
        search(target);
        on_chain.erase(target);
      }
      chain.pop_back();
    }
  };
  search(*first);
  if (chains.empty()) return {};
  // The common beginning (the caller's side) and the common end (the callee's side).
  std::vector<uint64_t> prefix = chains[0], suffix = chains[0];
  for (const auto& c : chains) {
    size_t n = 0;
    while (n < prefix.size() && n < c.size() && prefix[n] == c[n]) ++n;
    prefix.resize(n);
    size_t m = 0;
    while (m < suffix.size() && m < c.size() && suffix[suffix.size() - 1 - m] == c[c.size() - 1 - m]) ++m;
    suffix.erase(suffix.begin(), suffix.end() - static_cast<std::ptrdiff_t>(m));
  }
  std::vector<uint64_t> out = prefix;
  if (chains.size() > 1 || prefix.size() != chains[0].size()) {
    for (uint64_t rp : suffix) {
      if (std::find(out.begin(), out.end(), rp) == out.end()) out.push_back(rp);
    }
  }
  std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace toolhost::dwarf
