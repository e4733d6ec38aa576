#include <catch2/catch.hpp>

#include <toolhost/sdk/json.hpp>

#include "filter.hpp"
#include "permissions.hpp"

using namespace toolhost::rea_filter;

TEST_CASE("the eleven-rea filter denies REA's writes and window moves, naming the eleven tool") {
  const tool_filter f = tool_filter::eleven_rea();
  const std::vector<std::pair<std::string, std::string>> table = {{"set_address_name", "rename_function"},
                                                                  {"set_addresses_names", "rename_function"},
                                                                  {"set_comment", "add_comment"},
                                                                  {"set_inline_comment", "add_comment"},
                                                                  {"set_bookmark", "bookmark"},
                                                                  {"unset_bookmark", "bookmark"},
                                                                  {"set_code_type", "set_code_type"},
                                                                  {"goto_address", "open_function"},
                                                                  {"set_current_document", "open_function"}};
  REQUIRE(f.denied().size() == table.size());
  for (const auto& [tool, instead] : table) {
    INFO(tool);
    auto text = f.refusal(tool);
    REQUIRE(text.has_value());
    CHECK(*text == use_instead_message(tool, instead));
    CHECK(text->find("`" + instead + "`") != std::string::npos);
    CHECK(text->rfind(tool, 0) == 0);
  }
  CHECK(*f.refusal("set_comment") ==
        "set_comment is not available here: it would change names, comments or bookmarks behind the project's "
        "back. Use the `eleven` server's `add_comment` tool instead.");
  CHECK(*f.refusal("goto_address") ==
        "goto_address is not available here: it would move the analysis window behind Eleven's back. Use the "
        "`eleven` server's `open_function` tool instead.");
  for (const char* passes :
       {"list_procedures", "procedure_pseudo_code", "read_bytes", "comment", "xrefs", "open_binary"}) {
    CHECK_FALSE(f.refusal(passes).has_value());
  }
}

TEST_CASE("a configured denial takes a tool name or a sentence") {
  tool_filter f;
  f.deny("echo", "say");
  f.deny("get-env", "Reading the environment is not allowed here.");
  f.deny("gzip", "");
  CHECK(*f.refusal("echo") == "echo is not available here. Use the `eleven` server's `say` tool instead.");
  CHECK(*f.refusal("get-env") == "Reading the environment is not allowed here.");
  CHECK(*f.refusal("gzip") == "gzip is turned off for this server by its configuration.");
  CHECK_FALSE(f.denies("echo2"));
}

TEST_CASE("read-only classification follows REA's name patterns and readOnlyHint") {
  for (const char* name :
       {"open_binary", "binary_overview", "xrefs", "list_strings", "procedure_info", "read_bytes", "search_strings",
        "inspect_macho", "get_call_graph", "find_xrefs_to_name", "analyze_function", "compare_functions"}) {
    INFO(name);
    CHECK(is_read_only(name, nullptr));
  }
  for (const char* name : {"close_binary", "export_evidence_bundle", "set_comment", "run_controlled_replay", "list_",
                           "getter", "current_document", "extract_artifact"}) {
    INFO(name);
    CHECK_FALSE(is_read_only(name, nullptr));
  }
  auto yes = toolhost::sdk::parse_json(R"({"readOnlyHint":true})");
  auto no = toolhost::sdk::parse_json(R"({"readOnlyHint":false,"destructiveHint":false})");
  CHECK(is_read_only("binary_session", &*yes));
  CHECK_FALSE(is_read_only("binary_session", &*no));
}
