// The debugger's dt on DWARF types (issue 20): `dt -r8 module!type` on a live gdbserver target
// lays the types program's structs and unions, and the stack program's struct point, out as
// gdb's `ptype /o` does (offsets, bit offsets, sizes, nesting, total size).
#include <catch2/catch.hpp>

#include <string>

#include <toolhost/sdk/json.hpp>

#include "gdbserver_process.hpp"
#include "ptype_oracle.hpp"
#include "stack_tools.hpp"
#include "tool_answer.hpp"

using toolhost::testing::unpack;

TEST_CASE("dt of a DWARF module's types matches gdb's ptype /o", "[dwarf-dt]") {
  struct type_case {
    const char* program;
    const char* dt_name;
    const char* gdb_type;
  };
  const type_case cases[] = {{TYPES_PROGRAM, "packet", "struct packet"},
                             {TYPES_PROGRAM, "variant_t", "variant_t"},
                             {TYPES_PROGRAM, "inner", "struct inner"},
                             {STACK_PROGRAM_O2, "point", "struct point"}};
  for (const auto& c : cases) {
    INFO(c.program << ": dt " << c.dt_name);
    toolhost::testing::gdbserver_process server(c.program);
    auto tools = toolhost::testing::make_stack_tools();
    REQUIRE_FALSE(unpack(tools->open("gdb", server.address(), "")).error);
    const std::string exe = toolhost::debugger::module_name_of(c.program);
    auto a = unpack(tools->command("dt -r8 " + exe + "!" + c.dt_name, 20000, "json", [] { return false; }));
    INFO(a.text);
    REQUIRE_FALSE(a.error);
    auto doc = toolhost::sdk::parse_json(a.structured);
    REQUIRE(doc);
    toolhost::testing::check_dt_layout(c.program, c.gdb_type, a.text, toolhost::sdk::to_json((*doc)["result"]));
    tools->close();
  }
}
