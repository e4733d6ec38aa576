// `dt` over the neutral type model: a type's layout in WinDbg's words, its values at an
// address, and the same as JSON (format: "json"). Nothing here knows where the types or the
// memory come from.
//
//   types::dt_request r{table, id, "nt!_EPROCESS"};
//   r.address = 0xffffa7043f68e440;
//   r.read = [&](uint64_t a, std::span<uint8_t> out) { return target_read(a, out); };
//   auto out = types::render_dt(r);   // out->text, out->json
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>

#include "toolhost/types/type.hpp"

namespace toolhost::types {

// Reads memory at `address` into `out`; returns how many bytes were read (a prefix).
using memory_reader = std::function<size_t(uint64_t address, std::span<uint8_t> out)>;
// "nt!KiSystemStartup+0x10" for a code address, "" when nothing names it.
using symbolizer = std::function<std::string(uint64_t address)>;

struct dt_options {
  // -r[N]: embedded structures and unions are expanded N levels deep (bare -r: 1). At most 64.
  int depth = 0;
  // -a[N]: array elements shown one per line, at most N of them (bare -a: 16).
  size_t array_elements = 0;
  // Field filters: "Name", "Prefix*", "Outer.Inner" (through embedded structures, and through
  // pointers when there is an address). Empty: every field.
  std::vector<std::string> fields;
  // A result longer than this many lines ends with a line saying how many were left out.
  size_t max_lines = 20000;
};

struct dt_request {
  const type_table& table;
  type_id id;
  std::string qualified_name;  // "nt!_EPROCESS": the first line, and `type` in the JSON
  std::optional<uint64_t> address;
  memory_reader read;   // needed with an address
  symbolizer describe;  // optional: names function pointers' targets
  dt_options options;
};

struct dt_output {
  std::string text;  // WinDbg's layout, ending in '\n'
  std::string json;  // {"type", "size", "address", "fields": [...]} or, for an enum, {"enumerators": [...]}
};

absl::StatusOr<dt_output> render_dt(const dt_request& request);

// One value of `request.id` at `request.address`, in the words dt gives a member's value
// ("0n42", "0x00007ffc`1234abcd", "[4]  \"abc\"", "0n6 ( blue )"): what dv and kp show.
// `text` is the value; `json` is an object ({"value": ...}, {"string": ...}).
absl::StatusOr<dt_output> render_value(const dt_request& request);

// The C spelling of a type, typedef names kept: "int", "struct point *", "char [4]",
// "size_t" (what kp and dv /t print before a name).
std::string c_type_name(const type_table& table, type_id id);

// The WinDbg word for a member's type: "Uint4B", "Ptr64 _LIST_ENTRY", "[15] UChar",
// "Ptr64     long" (a function pointer), "_KPROCESS".
std::string type_word(const type_table& table, type_id id);

// `dt module!Prefix*`: the named types matching `pattern` (* and ?, case-insensitive), sorted.
std::vector<std::string> matching_type_names(const type_table& table, std::string_view pattern);

// Case-insensitive wildcard match with * and ?.
bool wildcard_match(std::string_view pattern, std::string_view text);

}  // namespace toolhost::types
