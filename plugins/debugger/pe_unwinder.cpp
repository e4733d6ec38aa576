#include "pe_unwinder.hpp"

#include <algorithm>
#include <vector>

#include <absl/strings/str_format.h>
#include <toolhost/symbols/symbol_locator.hpp>

namespace toolhost::debugger {

namespace {

// UNWIND_CODE register numbers (the x86 encoding: rax rcx rdx rbx rsp rbp rsi rdi r8-r15) to the
// walker's DWARF numbering.
constexpr int kDwarfOf[16] = {0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15};
// Volatile in the Windows x64 calling convention: unknown in a caller.
constexpr int kVolatile[] = {0, 1, 2, 8, 9, 10, 11};
constexpr uint32_t kIndirect = 1;  // RUNTIME_FUNCTION_INDIRECT: UnwindData names another entry
constexpr int kMaxChain = 32;      // chained UNWIND_INFO links followed at most

class pe_unwinder final : public frame_unwinder {
 public:
  pe_unwinder(std::shared_ptr<const pe::image> image, uint64_t base, std::vector<pe::runtime_function> functions)
      : image_(std::move(image)), base_(base), functions_(std::move(functions)) {}

  frame_origin origin() const override { return frame_origin::unwind_info; }

  std::optional<unwinder_step> unwind(uint64_t pc, bool activation, const unwind_registers& regs,
                                      const stack_reader& memory) const override {
    if (pc < base_ || pc - base_ >= image_->header().size_of_image || !regs.value[kRegSp]) return std::nullopt;
    const uint32_t rva = static_cast<uint32_t>(pc - base_);
    unwinder_step step;
    step.caller = regs;
    for (int r : kVolatile) step.caller.value[r].reset();
    unwind_registers& c = step.caller;
    // The function entry of the address itself, return addresses included, as RtlVirtualUnwind
    // takes ControlPc (Windows compilers never end a function with a call, so a return address is
    // inside its caller). An interrupted rip reported as a return address (a break-in on a
    // function's first instruction) then still unwinds.
    const std::optional<pe::runtime_function> entry = lookup(rva);
    if (!entry) {
      // A leaf function (no .pdata entry, rsp untouched): its return address is at rsp. Windows
      // takes any frame without an entry so (RtlDispatchException, RtlWalkFrameChain), which is
      // what an interrupted leaf function reported as a caller needs.
      return pop_return(c, memory) ? std::optional<unwinder_step>(step) : std::nullopt;
    }
    auto info = image_->unwind(entry->unwind_info);
    if (!info.ok()) return std::nullopt;
    const uint32_t offset = rva - entry->begin;
    if (activation && offset >= info->prolog_size) {
      if (auto done = unwind_epilog(rva, *entry, *info, c, memory)) {
        if (!*done) return std::nullopt;
        return step;
      }
    }
    bool machine_frame = false;
    if (!apply(*info, offset, c, memory, machine_frame)) return std::nullopt;
    // Chained entries (UNW_FLAG_CHAININFO): the parent function's codes, all of them.
    std::optional<pe::runtime_function> chained = info->chained;
    for (int depth = 0; chained && !machine_frame; ++depth) {
      if (depth == kMaxChain) return std::nullopt;
      auto parent = resolve(*chained);
      if (!parent) return std::nullopt;
      auto parent_info = image_->unwind(parent->unwind_info);
      if (!parent_info.ok()) return std::nullopt;
      if (!apply(*parent_info, UINT32_MAX, c, memory, machine_frame)) return std::nullopt;
      chained = parent_info->chained;
    }
    if (machine_frame) {
      // The interrupted context's rip is exact, as a signal frame's is.
      step.signal_frame = true;
      return step;
    }
    return pop_return(c, memory) ? std::optional<unwinder_step>(step) : std::nullopt;
  }

 private:
  std::optional<pe::runtime_function> lookup(uint32_t rva) const {
    auto it = std::upper_bound(functions_.begin(), functions_.end(), rva,
                               [](uint32_t a, const pe::runtime_function& f) { return a < f.begin; });
    if (it == functions_.begin()) return std::nullopt;
    --it;
    if (rva >= it->end) return std::nullopt;
    return resolve(*it);
  }

  // Follows RUNTIME_FUNCTION_INDIRECT: the entry's UnwindData is the RVA of another entry.
  std::optional<pe::runtime_function> resolve(pe::runtime_function f) const {
    for (int depth = 0; (f.unwind_info & kIndirect) != 0; ++depth) {
      if (depth == kMaxChain) return std::nullopt;
      auto raw = image_->read(f.unwind_info & ~kIndirect, 12);
      if (!raw.ok()) return std::nullopt;
      auto u32 = [&](size_t at) {
        uint32_t v = 0;
        for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>((*raw)[at + i]);
        return v;
      };
      f = {u32(0), u32(4), u32(8)};
    }
    return f;
  }

  static bool pop_return(unwind_registers& c, const stack_reader& memory) {
    const uint64_t sp = *c.value[kRegSp];
    auto ret = memory(sp, 8);
    if (!ret) return false;
    c.value[kRegPc] = *ret;
    c.value[kRegSp] = sp + 8;
    return true;
  }

  // The codes of one UNWIND_INFO, undoing the prolog up to `offset` in it (all of it past the
  // prolog), as RtlVirtualUnwind does: a code applies when its instruction has run.
  static bool apply(const pe::unwind_info& info, uint32_t offset, unwind_registers& c, const stack_reader& memory,
                    bool& machine_frame) {
    const bool in_prolog = offset < info.prolog_size;
    for (const pe::unwind_code& code : info.codes) {
      if (in_prolog && code.prolog_offset > offset) continue;
      uint64_t& sp = *c.value[kRegSp];
      switch (code.op) {
        case pe::kPushNonvol: {
          auto v = memory(sp, 8);
          if (!v) return false;
          c.value[kDwarfOf[code.info & 15]] = *v;
          sp += 8;
          break;
        }
        case pe::kAllocLarge:
        case pe::kAllocSmall: sp += code.value; break;
        case pe::kSetFpreg: {
          const auto& fp = c.value[kDwarfOf[info.frame_register & 15]];
          if (!fp) return false;
          sp = *fp - info.frame_offset;
          break;
        }
        case pe::kSaveNonvol:
        case pe::kSaveNonvolFar: {
          auto v = memory(sp + code.value, 8);
          if (!v) return false;
          c.value[kDwarfOf[code.info & 15]] = *v;
          break;
        }
        case pe::kPushMachframe: {
          // MACHINE_FRAME: [error code,] RIP, CS, EFLAGS, old RSP, SS.
          const uint64_t frame = sp + (code.info != 0 ? 8 : 0);
          auto rip = memory(frame, 8), rsp = memory(frame + 24, 8);
          if (!rip || !rsp) return false;
          c.value[kRegPc] = *rip;
          sp = *rsp;
          machine_frame = true;
          return true;
        }
        default: break;  // XMM saves and epilog descriptors restore no integer register
      }
    }
    return true;
  }

  // Frame 0 inside an epilog: the rest of it is run forward, as RtlVirtualUnwind does (an
  // optional `add rsp, imm` or `lea rsp, [fp + disp]`, pops, then a return or a jump out of the
  // function). nullopt: the pc is not in an epilog; false: it is but the stack is unreadable.
  std::optional<bool> unwind_epilog(uint32_t rva, const pe::runtime_function& entry, const pe::unwind_info& info,
                                    unwind_registers& c, const stack_reader& memory) const {
    auto code = image_->read(rva, std::min<uint32_t>(64, entry.end + 16 - rva));
    if (!code.ok()) return std::nullopt;
    const std::string& b = *code;
    auto at = [&](size_t i) -> int { return i < b.size() ? static_cast<uint8_t>(b[i]) : -1; };
    size_t i = 0;
    std::optional<uint64_t> sp_after;
    const uint64_t sp = *c.value[kRegSp];
    if (at(0) == 0x48 && at(1) == 0x83 && at(2) == 0xc4) {
      sp_after = sp + static_cast<uint8_t>(at(3));
      i = 4;
    } else if (at(0) == 0x48 && at(1) == 0x81 && at(2) == 0xc4 && b.size() >= 7) {
      sp_after = sp + (static_cast<uint32_t>(at(3)) | static_cast<uint32_t>(at(4)) << 8 |
                       static_cast<uint32_t>(at(5)) << 16 | static_cast<uint32_t>(at(6)) << 24);
      i = 7;
    } else if ((at(0) & 0xfe) == 0x48 && at(1) == 0x8d && info.frame_register != 0) {
      // lea rsp, [frame register + disp8/disp32]
      const int modrm = at(2);
      const int rm = (modrm & 7) | ((at(0) & 1) << 3);
      if (((modrm >> 3) & 7) != 4 || rm != info.frame_register || ((modrm >> 6) != 1 && (modrm >> 6) != 2))
        return std::nullopt;
      const auto& fp = c.value[kDwarfOf[rm]];
      if (!fp) return std::nullopt;
      if ((modrm >> 6) == 1) {
        sp_after = *fp + static_cast<int8_t>(at(3));
        i = 4;
      } else {
        if (b.size() < 7) return std::nullopt;
        sp_after = *fp + static_cast<int32_t>(static_cast<uint32_t>(at(3)) | static_cast<uint32_t>(at(4)) << 8 |
                                              static_cast<uint32_t>(at(5)) << 16 | static_cast<uint32_t>(at(6)) << 24);
        i = 7;
      }
    }
    std::vector<int> pops;
    for (;;) {
      if (at(i) >= 0x58 && at(i) <= 0x5f) {
        pops.push_back(at(i) - 0x58);
        i += 1;
      } else if (at(i) == 0x41 && at(i + 1) >= 0x58 && at(i + 1) <= 0x5f) {
        pops.push_back(8 + at(i + 1) - 0x58);
        i += 2;
      } else {
        break;
      }
    }
    const uint64_t here = base_ + rva;
    auto outside = [&](int64_t target) {
      const uint64_t t = here + static_cast<uint64_t>(target);
      return t < base_ + entry.begin || t >= base_ + entry.end;
    };
    bool ends = at(i) == 0xc3 || at(i) == 0xc2 || (at(i) == 0xf3 && at(i + 1) == 0xc3);
    if (at(i) == 0xe9 && i + 5 <= b.size()) {
      const int32_t rel =
          static_cast<int32_t>(static_cast<uint32_t>(at(i + 1)) | static_cast<uint32_t>(at(i + 2)) << 8 |
                               static_cast<uint32_t>(at(i + 3)) << 16 | static_cast<uint32_t>(at(i + 4)) << 24);
      ends = outside(static_cast<int64_t>(i) + 5 + rel);
    } else if (at(i) == 0xeb && i + 2 <= b.size()) {
      ends = outside(static_cast<int64_t>(i) + 2 + static_cast<int8_t>(at(i + 1)));
    } else if (at(i) == 0x48 && at(i + 1) == 0xff && (at(i + 2) & 0x38) == 0x20) {
      ends = true;  // rex.w jmp r/m64: a tail call through a register or memory
    }
    if (!ends) return std::nullopt;
    c.value[kRegSp] = sp_after.value_or(sp);
    for (int r : pops) {
      auto v = memory(*c.value[kRegSp], 8);
      if (!v) return false;
      c.value[kDwarfOf[r]] = *v;
      *c.value[kRegSp] += 8;
    }
    return pop_return(c, memory);
  }

  std::shared_ptr<const pe::image> image_;
  uint64_t base_;
  std::vector<pe::runtime_function> functions_;  // sorted by begin (checked by runtime_functions)
};

}  // namespace

std::shared_ptr<const frame_unwinder> make_pe_unwinder(std::shared_ptr<const pe::image> image, uint64_t base) {
  if (!image || image->header().machine != pe::kMachineAmd64) return nullptr;
  auto functions = image->runtime_functions();
  if (!functions.ok() || functions->empty()) return nullptr;
  return std::make_shared<pe_unwinder>(std::move(image), base, std::move(*functions));
}

std::shared_ptr<const frame_unwinder> unwinder_from_image_file(const symbols::symbol_path& path,
                                                               const std::string& file_name, const pe::image& loaded,
                                                               uint64_t base, std::chrono::milliseconds timeout,
                                                               std::function<bool()> cancelled, std::string& where,
                                                               std::string& problem) {
  const pe::headers& h = loaded.header();
  if (path.empty() || file_name.empty()) {
    problem = "its .pdata is not in memory and the symbol path is empty";
    return nullptr;
  }
  std::shared_ptr<const pe::image> file;
  symbols::file_request request;
  request.name = file_name;
  request.key = absl::StrFormat("%08X%x", h.timestamp, h.size_of_image);
  request.timeout = timeout;
  request.cancelled = std::move(cancelled);
  request.verify = [&](const std::string& candidate) -> absl::Status {
    auto image = pe::image::open_file(candidate);
    if (!image.ok()) return image.status();
    if (image->header().timestamp != h.timestamp || image->header().size_of_image != h.size_of_image) {
      return absl::NotFoundError(candidate + " is another build (its TimeDateStamp or SizeOfImage differs)");
    }
    file = std::make_shared<const pe::image>(std::move(*image));
    return absl::OkStatus();
  };
  auto result = symbols::locate(path, request);
  if (!result.found || !file) {
    problem = "its .pdata is not in memory and " + file_name + " (" + request.key + ") is not on the symbol path";
    if (!result.notes.empty()) problem += ": " + result.notes.back();
    return nullptr;
  }
  where =
      result.found->downloaded ? result.found->path + ", downloaded from " + result.found->origin : result.found->path;
  return make_pe_unwinder(std::move(file), base);
}

}  // namespace toolhost::debugger
