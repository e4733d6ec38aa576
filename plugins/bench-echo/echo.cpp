// The `bench-echo` plugin: one tool, `echo`, with the contract of the reference server's
// (@modelcontextprotocol/server-everything) echo — {message} in, "Echo: <message>" out — so that
// bench/mcp measures the two hosts, not two different tools.
#include <toolhost/sdk/sdk.hpp>

namespace {

namespace sdk = toolhost::sdk;

absl::Status init(sdk::plugin& p) {
  if (auto s = p.declare_settings(sdk::kNoSettings); !s.ok()) return s;
  if (auto s = p.permission_kind("bench-echo.echo", "Echo a message back", TOOLHOST_PERMISSION_ALLOW); !s.ok())
    return s;
  return p.tool("echo")
      .title("Echo Tool")
      .description("Echoes back the input string")
      .input_schema(
          R"({"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"]})")
      .annotations(R"({"readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false})")
      .permission("bench-echo.echo")
      .concurrent()
      .handler([](const sdk::args& a, sdk::call&) { return sdk::result::text("Echo: " + a.string("message")); });
}

}  // namespace

TOOLHOST_PLUGIN("bench-echo", "1.0.0", "The echo tool the MCP benchmark calls", init)
