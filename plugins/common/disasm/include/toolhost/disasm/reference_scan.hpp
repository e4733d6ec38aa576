// toolhost::disasm: the references a stretch of x86 machine code makes, found by a linear
// sweep that decodes each instruction once and formats nothing (whole-program analysis).
//
//   toolhost::disasm::reference_scanner scan(toolhost::disasm::mode::x86_64, mapped_ranges);
//   std::vector<toolhost::disasm::code_reference> refs;
//   auto stats = scan.scan(text_address, text_bytes, function_starts, refs);
//
// The sweep follows objdump -d: it restarts at each address in `resync` (function starts), and
// skips runs of 8 or more zero bytes the way objdump prints them as "...". An undecodable byte
// is stepped over. A scanner is immutable and may be used from several threads at once.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "toolhost/disasm/decoder.hpp"

namespace toolhost::disasm {

// What an instruction does with the address it names.
enum class reference_kind : uint8_t {
  call,              // call rel32: `to` is the callee
  jump,              // jmp rel: `to` is the destination
  conditional_jump,  // jcc / loop / jrcxz rel
  indirect_call,     // call [slot]: `to` is the slot that holds the callee (a GOT or IAT entry)
  indirect_jump,     // jmp [slot]: likewise (PLT and import thunks)
  read,              // a memory operand the instruction reads at `to`
  write,             // ... writes
  read_write,        // ... reads and writes
  address,           // the address itself is taken: lea, or an immediate that points into the image
};

struct code_reference {
  uint64_t from = 0;  // the instruction's address
  uint64_t to = 0;
  reference_kind kind = reference_kind::call;
  uint8_t operand = 0;  // index of the operand that names `to`
};

inline bool is_flow(reference_kind k) {
  return k == reference_kind::call || k == reference_kind::jump || k == reference_kind::conditional_jump;
}

// [start, end) address ranges the image maps, sorted and disjoint.
struct address_range {
  uint64_t start = 0;
  uint64_t end = 0;
};

struct scan_stats {
  uint64_t instructions = 0;
  uint64_t undecodable = 0;  // bytes stepped over because nothing decodes there
};

class reference_scanner {
 public:
  // `mapped` says which immediates and absolute displacements are addresses worth a
  // reference; branch targets are always reported.
  reference_scanner(mode m, std::vector<address_range> mapped);

  // Sweeps `bytes` (at virtual `address`) and appends what the instructions reference, in
  // address order. `resync` is sorted; an instruction that would run across one of its
  // addresses is dropped and decoding restarts there.
  scan_stats scan(uint64_t address, std::span<const uint8_t> bytes, std::span<const uint64_t> resync,
                  std::vector<code_reference>& out) const;

  bool is_mapped(uint64_t address) const noexcept;

 private:
  mode mode_;
  std::vector<address_range> mapped_;
};

}  // namespace toolhost::disasm
