// dt of DWARF types against gdb's `ptype /o` (issue 20), at the library: toolhost::dwarf's types
// as the debugger reads them, shown by the render_dt that `dt` uses for PDB types too, for the
// types program's structs and unions and the stack program's `struct point` (the debugger's dt
// command on the same types: debugger_dt).
#include <catch2/catch.hpp>

#include <string>

#include <toolhost/dwarf/module_debug.hpp>
#include <toolhost/types/dt.hpp>

#include "ptype_oracle.hpp"

namespace {

void compare(const std::string& program, const std::string& dt_name, const std::string& gdb_type) {
  INFO(program << ": dt " << dt_name << " against ptype /o " << gdb_type);
  auto m = toolhost::dwarf::module_debug::open(program, 0, {});
  REQUIRE(m.ok());
  const toolhost::types::type_table* table = (*m)->types();
  REQUIRE(table != nullptr);
  auto id = table->find(dt_name);
  REQUIRE(id);
  toolhost::types::dt_request request{*table, *id, "program!" + dt_name};
  request.options.depth = 8;
  auto shown = toolhost::types::render_dt(request);
  REQUIRE(shown.ok());
  toolhost::testing::check_dt_layout(program, gdb_type, shown->text, shown->json);
}

}  // namespace

TEST_CASE("dt of DWARF structs and unions matches gdb's ptype /o", "[dwarf-types]") {
  compare(TYPES_PROGRAM, "packet", "struct packet");
  compare(TYPES_PROGRAM, "variant", "union variant");
  compare(TYPES_PROGRAM, "variant_t", "variant_t");
  compare(TYPES_PROGRAM, "inner_t", "inner_t");
  compare(TYPES_PROGRAM, "inner", "struct inner");
  compare(STACK_PROGRAM_O0, "point", "struct point");
  compare(STACK_PROGRAM_O2, "point", "struct point");
}
