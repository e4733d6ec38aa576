// The register map from a stub's target description XML (qXfer:features:read:target.xml).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::gdb {

struct register_info {
  std::string name;
  uint32_t bits = 0;
  uint32_t regnum = 0;  // the stub's number (p/P packets)
  uint32_t offset = 0;  // byte offset in the 'g' block
  std::string type;
  std::string role;  // "pc", "sp", "fp", "flags", "cr3" or ""
};

struct target_description {
  std::string architecture;
  std::vector<register_info> registers;  // in regnum order, offsets assigned
  uint32_t total_bytes() const;
};

// Reads one annex (e.g. "target.xml") in full; the parser calls it for xi:include too.
using annex_reader = std::function<absl::StatusOr<std::string>(std::string_view annex)>;

// Parses `annex` and every file it includes (to a depth of 8). Registers without a regnum take
// the next number after the previous one, as GDB does.
absl::StatusOr<target_description> read_target_description(const annex_reader& read,
                                                           std::string_view annex = "target.xml");

// The value of attribute `name` in one XML tag's text, or "".
std::string xml_attribute(std::string_view tag, std::string_view name);

}  // namespace toolhost::gdb
