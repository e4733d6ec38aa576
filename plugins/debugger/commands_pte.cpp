// !pte and !vtop: x64 page-table entries in WinDbg's layout (the self-map addresses of each
// level, their contents, flags and PFNs; transition and paged-out PTEs decoded).
#include <absl/strings/str_format.h>
#include <toolhost/paging/page_walk.hpp>
#include <toolhost/sdk/json.hpp>

#include "command_line.hpp"
#include "format.hpp"
#include "session.hpp"

namespace toolhost::debugger {

namespace {

constexpr uint64_t kValid = 1, kWrite = 2, kOwner = 4, kWriteThrough = 8, kCacheDisable = 0x10, kAccessed = 0x20,
                   kDirty = 0x40, kLarge = 0x80, kGlobal = 0x100, kCopyOnWrite = 0x200, kPrototype = 0x400,
                   kTransition = 0x800, kSoftwareWrite = 0x800, kNoExecute = 1ull << 63;
constexpr uint64_t kFrameMask = 0x000ffffffffff000ull;
const char* const kLevels[] = {"PXE", "PPE", "PDE", "PTE"};
const char* const kProtections[] = {"Zero",      "Readonly",  "Execute",          "ExecuteRead",
                                    "ReadWrite", "WriteCopy", "ReadWriteExecute", "WriteCopyExecute"};

// WinDbg's eleven flag letters of a valid entry: C G L D A N T U/K W/R E V.
std::string flag_letters(uint64_t e, bool may_be_large) {
  std::string f = "-----------";
  if (e & kCopyOnWrite) f[0] = 'C';
  if (e & kGlobal) f[1] = 'G';
  if (may_be_large && (e & kLarge)) f[2] = 'L';
  if (e & kDirty) f[3] = 'D';
  if (e & kAccessed) f[4] = 'A';
  if (e & kCacheDisable) f[5] = 'N';
  if (e & kWriteThrough) f[6] = 'T';
  f[7] = (e & kOwner) ? 'U' : 'K';
  f[8] = (e & kWrite) || (e & kSoftwareWrite) ? 'W' : 'R';
  f[9] = (e & kNoExecute) ? '-' : 'E';
  f[10] = (e & kValid) ? 'V' : '-';
  return f;
}

std::string column(std::string text) {
  if (text.size() < 27) text.resize(27, ' ');
  return text;
}

// What a not-present entry says: zero, a prototype, a transition page, or a page in the file.
std::vector<std::string> invalid_lines(uint64_t e) {
  if (e == 0) return {"not valid"};
  std::vector<std::string> out = {"not valid"};
  const uint64_t protection = (e >> 5) & 0x1f;
  const std::string protect = absl::StrFormat(" Protect: %x - %s", protection, kProtections[protection & 7]);
  if (e & kPrototype) {
    out.push_back(absl::StrFormat(" Proto: %016x", e >> 16));
  } else if (e & kTransition) {
    out.push_back(absl::StrFormat(" Transition: %x", (e & kFrameMask) >> 12));
    out.push_back(protect);
  } else {
    const uint64_t file = (e >> 1) & 0xf, offset = e >> 32;
    if (offset == 0 && file == 0) {
      out.push_back(" Demand zero");
    } else {
      out.push_back(absl::StrFormat(" PageFile:  %x", file));
      out.push_back(absl::StrFormat(" Offset: %x", offset));
    }
    out.push_back(protect);
  }
  return out;
}

}  // namespace

absl::Status session::cmd_pte(const std::string& name, std::string_view args) {
  if (auto s = need_windows(name); !s.ok()) return s;
  if (!target_->has(TOOLHOST_DT_CAP_READ_PHYSICAL)) {
    return absl::UnimplementedError("the " + target_->backend() +
                                    " backend cannot read physical memory, which !pte walks");
  }
  if (trim(args).empty()) return usage_error(name, "!pte needs a virtual address");
  auto va = eval(args);
  if (!va.ok()) return usage_error(name, std::string(va.status().message()));
  const uint64_t dtb =
      scope_ ? scope_->dtb
             : ((*va >> 63) == 0 && paging::cr3_table(current_cr3()) != 0 ? paging::cr3_table(current_cr3())
                                                                          : windows_->dtb());
  // The entries, read from the tables (the self-map addresses below are where Windows sees them).
  uint64_t entries[4] = {}, physical[4] = {};
  int levels = 0;
  uint64_t table = dtb;
  for (int level = 0; level < 4; ++level) {
    physical[level] = table + ((*va >> (39 - 9 * level)) & 0x1ff) * 8;
    auto raw = target_->read(physical[level], 8, TOOLHOST_DT_PHYSICAL);
    if (!raw.ok() || raw->size() != 8) {
      return absl::NotFoundError(
          absl::StrFormat("the %s of %016x at physical %x is not readable", kLevels[level], *va, physical[level]));
    }
    std::memcpy(&entries[level], raw->data(), 8);
    levels = level + 1;
    if (!(entries[level] & kValid) || ((level == 1 || level == 2) && (entries[level] & kLarge))) break;
    table = entries[level] & kFrameMask;
  }
  const int self = windows_->self_map_index();
  auto self_va = [&](int level) -> uint64_t {
    const uint64_t i = static_cast<uint64_t>(self);
    const uint64_t pte_base = 0xffff000000000000ull | (i << 39);
    const uint64_t bases[4] = {pte_base + (i << 30) + (i << 21) + (i << 12), pte_base + (i << 30) + (i << 21),
                               pte_base + (i << 30), pte_base};
    const int shift = 39 - 9 * level;
    return bases[level] + (((*va & 0xffffffffffffull) >> shift) << 3);
  };
  out_ += std::string(43, ' ') + absl::StrFormat("VA %016x\n", *va);
  std::string at, contains, flags;
  std::string json = absl::StrFormat(R"({"va":"0x%x","dirbase":"0x%x","entries":[)", *va, dtb);
  for (int level = 0; level < levels; ++level) {
    const uint64_t e = entries[level];
    at += column(self >= 0 ? absl::StrFormat("%s at %016X", kLevels[level], self_va(level))
                           : absl::StrFormat("%s at (phys) %X", kLevels[level], physical[level]));
    contains += column(absl::StrFormat("contains %016X", e));
    const bool large = (level == 1 || level == 2) && (e & kValid) && (e & kLarge);
    if (e & kValid) {
      flags +=
          column(absl::StrFormat("pfn %-10x%s", (e & kFrameMask) >> 12, flag_letters(e, level == 1 || level == 2)));
    } else {
      flags += column("not valid");
    }
    json += absl::StrFormat(
        R"(%s{"level":"%s","address":"0x%x","physical":"0x%x","contains":"0x%x","valid":%s,"large":%s})",
        level ? "," : "", kLevels[level], self >= 0 ? self_va(level) : physical[level], physical[level], e,
        (e & kValid) ? "true" : "false", large ? "true" : "false");
    if (large) {
      const uint64_t size = level == 1 ? 1ull << 30 : 1ull << 21;
      const uint64_t frame = ((e & kFrameMask & ~(size - 1)) | (*va & (size - 1))) >> 12;
      flags += column(absl::StrFormat("LARGE PAGE pfn %x", frame));
    }
  }
  out_ += at + "\n" + contains + "\n" + flags + "\n";
  const uint64_t last = entries[levels - 1];
  if (!(last & kValid)) {
    for (const auto& l : invalid_lines(last)) out_ += l + "\n";
    const uint64_t protection = (last >> 5) & 0x1f;
    const char* kind = last == 0              ? "zero"
                       : (last & kPrototype)  ? "prototype"
                       : (last & kTransition) ? "transition"
                                              : "paged out";
    json += absl::StrFormat(R"(],"state":"%s","protection":%d)", kind, protection);
    if (last & kTransition) json += absl::StrFormat(R"(,"transition_pfn":"0x%x")", (last & kFrameMask) >> 12);
    if (!(last & (kTransition | kPrototype)) && last != 0) {
      json += absl::StrFormat(R"(,"page_file":%d,"page_file_offset":"0x%x")", (last >> 1) & 0xf, last >> 32);
    }
  } else {
    json += R"(],"state":"valid")";
  }
  result_json_ = json + "}";
  return absl::OkStatus();
}

absl::Status session::cmd_vtop(const std::string& name, std::string_view args) {
  if (!target_->has(TOOLHOST_DT_CAP_READ_PHYSICAL)) {
    return absl::UnimplementedError("the " + target_->backend() +
                                    " backend cannot read physical memory, which !vtop walks");
  }
  size_t pos = 0;
  skip_blanks(args, pos);
  if (pos >= args.size())
    return usage_error(name, "!vtop needs a directory base (0: the current process) and an address");
  auto base = eval_prefix(args, pos);
  if (!base.ok()) return usage_error(name, std::string(base.status().message()));
  skip_blanks(args, pos);
  if (pos >= args.size()) return usage_error(name, "!vtop needs the virtual address after the directory base");
  auto va = eval_prefix(args, pos);
  if (!va.ok()) return usage_error(name, std::string(va.status().message()));
  uint64_t dtb = *base;
  if (dtb == 0) {
    if (scope_)
      dtb = scope_->dtb;
    else if (const uint64_t cr3 = paging::cr3_table(current_cr3()))
      dtb = cr3;
    else if (windows_)
      dtb = windows_->dtb();
    else
      return absl::NotFoundError("!vtop 0 needs the current directory base, which is not known here; give it");
  } else if ((dtb & 0xfff) != 0) {
    dtb <<= 12;  // a page frame number, as WinDbg also takes it
  }
  out_ += absl::StrFormat("Amd64VtoP: Virt %016x, pagedir %016x\n", *va, dtb);
  static const char* const kNames[] = {"PML4E", "PDPE", "PDE", "PTE"};
  uint64_t table = dtb;
  std::string json = absl::StrFormat(R"({"va":"0x%x","dirbase":"0x%x","entries":[)", *va, dtb);
  for (int level = 0; level < 4; ++level) {
    const uint64_t at = table + ((*va >> (39 - 9 * level)) & 0x1ff) * 8;
    auto raw = target_->read(at, 8, TOOLHOST_DT_PHYSICAL);
    if (!raw.ok() || raw->size() != 8)
      return absl::NotFoundError(absl::StrFormat("Amd64VtoP: %s at %x is not readable", kNames[level], at));
    uint64_t e;
    std::memcpy(&e, raw->data(), 8);
    out_ += absl::StrFormat("Amd64VtoP: %s %016x\n", kNames[level], at);
    json +=
        absl::StrFormat(R"(%s{"level":"%s","address":"0x%x","value":"0x%x"})", level ? "," : "", kNames[level], at, e);
    if (!(e & kValid)) {
      out_ += absl::StrFormat("Amd64VtoP: %s not present (%016x)\n", kNames[level], e);
      out_ += absl::StrFormat("Virtual address %x translation fails, error 0xD0000147.\n", *va);
      result_json_ = json + R"(],"physical":null})";
      return absl::OkStatus();
    }
    if ((level == 1 || level == 2) && (e & kLarge)) {
      const uint64_t size = level == 1 ? 1ull << 30 : 1ull << 21;
      const uint64_t pa = (e & kFrameMask & ~(size - 1)) | (*va & (size - 1));
      out_ += absl::StrFormat("Amd64VtoP: Large page mapped phys %016x\n", pa);
      out_ += absl::StrFormat("Virtual address %x translates to physical address %x.\n", *va, pa);
      result_json_ = json + absl::StrFormat(R"(],"physical":"0x%x","page_size":"0x%x"})", pa, size);
      return absl::OkStatus();
    }
    table = e & kFrameMask;
  }
  const uint64_t pa = table | (*va & 0xfff);
  out_ += absl::StrFormat("Amd64VtoP: Mapped phys %016x\n", pa);
  out_ += absl::StrFormat("Virtual address %x translates to physical address %x.\n", *va, pa);
  result_json_ = json + absl::StrFormat(R"(],"physical":"0x%x","page_size":"0x1000"})", pa);
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
