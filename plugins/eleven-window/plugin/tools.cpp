#include "tools.hpp"

#include <toolhost/plugin.h>
#include <toolhost/eleven/values.hpp>
#include <toolhost/sdk/json.hpp>

namespace toolhost::eleven {
namespace {

std::string_view str(const rapidjson::Value& args, std::string_view name) {
  const auto v = sdk::string_member(args, name);
  return v ? *v : std::string_view();
}

// A function is named by a name or by a 0x address; only the address form can be checked
// here, names are the window's to resolve.
absl::Status check_function(std::string_view text) {
  if (text.empty()) return absl::InvalidArgumentError("No function given: name it, or give its address like 0x401136.");
  if (looks_like_address(text)) return parse_address(text).status();
  return absl::OkStatus();
}

absl::Status no_check(const rapidjson::Value&) { return absl::OkStatus(); }

absl::Status check_open_function(const rapidjson::Value& a) { return check_function(str(a, "function")); }

absl::Status check_set_view(const rapidjson::Value& a) { return check_view(str(a, "view")); }

absl::Status check_rename(const rapidjson::Value& a) {
  if (auto s = check_function(str(a, "function")); !s.ok()) return s;
  return check_new_name(str(a, "new_name"));
}

absl::Status check_note(const rapidjson::Value& a) { return check_function(str(a, "function")); }

absl::Status check_comment(const rapidjson::Value& a) { return parse_address(str(a, "address")).status(); }

absl::Status check_bookmark(const rapidjson::Value& a) { return check_function(str(a, "address")); }

absl::Status check_code_type_args(const rapidjson::Value& a) {
  if (auto s = parse_address(str(a, "address")).status(); !s.ok()) return s;
  return check_code_type(str(a, "type"));
}

absl::Status check_number_format_args(const rapidjson::Value& a) {
  if (auto s = parse_address(str(a, "address")).status(); !s.ok()) return s;
  return check_number_format(str(a, "format"));
}

absl::Status check_patch(const rapidjson::Value& a) {
  if (auto s = parse_address(str(a, "address")).status(); !s.ok()) return s;
  if (auto s = parse_hex_bytes(str(a, "bytes")).status(); !s.ok()) return s;
  if (str(a, "reason").find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return absl::InvalidArgumentError("Give a reason: one sentence on what the patch does, shown to the user.");
  }
  return absl::OkStatus();
}

constexpr permission_row kRows[] = {
    {"eleven.move", "Move around the window", TOOLHOST_PERMISSION_ALLOW},
    {"eleven.rename", "Rename functions and variables", TOOLHOST_PERMISSION_ASK},
    {"eleven.annotate", "Add notes, comments and bookmarks", TOOLHOST_PERMISSION_ASK},
    {"eleven.patch", "Patch bytes", TOOLHOST_PERMISSION_ASK},
};

constexpr std::string_view kNoArgs = R"({"type":"object","properties":{},"additionalProperties":false})";

constexpr std::string_view kCurrentViewOutput = R"({
  "type": "object",
  "properties": {
    "file": {"type": "string"},
    "function": {"type": ["string", "null"]},
    "address": {"type": ["string", "null"]},
    "view": {"type": ["string", "null"], "enum": ["pseudocode", "assembly", "graph", "hex", null]}
  },
  "required": ["file", "function", "address", "view"]
})";

constexpr uint32_t kEdit = TOOLHOST_TOOL_REVIEWABLE;

const tool_spec kTools[] = {
    {"current_view", "Current view",
     "What the user is looking at right now.\n\nNo arguments. Returns JSON: "
     R"({ "file": "/path/to/binary", "function": "check_license", "address": "0x401196", "view": "pseudocode" }.)"
     " `function`, `address` and `view` are `null` when nothing is selected.",
     kNoArgs, kCurrentViewOutput, "eleven.move", TOOLHOST_TOOL_CONCURRENT, true, no_check},
    {"open_function", "Open function",
     "Shows a function in the window, on the canvas and in the workbench. Call it whenever you start talking "
     "about a function, so the user sees what you see.\n\nFunctions can be named by their Ghidra name "
     "(`FUN_00401196`), by a name the user or an agent gave them, or by address (`0x401196`). Returns "
     "`Showing <name> (<address>) to the user.`",
     R"({"type":"object","properties":{)"
     R"("function": {"type": "string", "description": "Function name or address"})"
     R"(},"required":["function"],"additionalProperties":false})",
     "", "eleven.move", 0, false, check_open_function},
    {"set_view", "Set view",
     "Switches the code view.\n\nOnly the workbench can switch views. If the user is on the home canvas, the tool "
     "says so and they keep reading pseudocode.",
     R"({"type":"object","properties":{"view":{"type":"string","enum":["pseudocode","assembly","graph","hex"],)"
     R"("description":"The view to show"}},"required":["view"],"additionalProperties":false})",
     "", "eleven.move", 0, false, check_set_view},
    {"list_marks", "List marks",
     "Everything already written into the project for this file: renames, bookmarks, notes, line comments, code "
     "types, number formats, and the agent's own suggestions still waiting for review. Call it before renaming so "
     "you don't redo work.\n\nNo arguments. Returns one line per mark, for example:\n"
     "renamed 0x100003f2c to check_license\n"
     "note on check_license: Compares the key against a hard-coded hash.\n"
     "waiting for the user's review: Patch 0x100003f40 to 1f 20 03 d5",
     kNoArgs, "", "eleven.move", TOOLHOST_TOOL_CONCURRENT, true, no_check},
    {"rename_function", "Rename function",
     "Renames a function in the user's Eleven project (never in the binary). Names that are not C identifiers are "
     "refused. Every change is logged with the agent's name and chat, and the user can undo it. When the user's "
     "review setting is on, the rename is filed as a suggestion and the answer starts with \"Suggested to the "
     "user\".",
     R"({"type":"object","properties":{)"
     R"("function": {"type": "string", "description": "Function name or address"},)"
     R"("new_name":{"type":"string","description":"A C identifier, like `check_license_key`"}},)"
     R"("required":["function","new_name"],"additionalProperties":false})",
     "", "eleven.rename", kEdit, false, check_rename},
    {"add_note", "Add note",
     "A short note on a function, shown beside its code. Written to the user's project, logged and undoable; a "
     "suggestion when review is on.",
     R"({"type":"object","properties":{)"
     R"("function": {"type": "string", "description": "Function name or address"},)"
     R"("note":{"type":"string","description":"The note. Empty removes it."}},)"
     R"("required":["function","note"],"additionalProperties":false})",
     "", "eleven.annotate", kEdit, false, check_note},
    {"add_comment", "Add comment",
     "A comment on one instruction, shown at the end of that line in assembly and the graph. Written to the "
     "user's project, logged and undoable; a suggestion when review is on.",
     R"({"type":"object","properties":{"address":{"type":"string","description":"Hexadecimal address"},)"
     R"("comment":{"type":"string","description":"The comment. Empty removes it."}},)"
     R"("required":["address","comment"],"additionalProperties":false})",
     "", "eleven.annotate", kEdit, false, check_comment},
    {"bookmark", "Bookmark",
     "Adds a bookmark to the sidebar. Written to the user's project, logged and undoable; a suggestion when review "
     "is on.",
     R"({"type":"object","properties":{"address":{"type":"string","description":"Function name or hexadecimal address"},)"
     R"("label":{"type":"string","description":"Short label. Empty uses the address."}},)"
     R"("required":["address"],"additionalProperties":false})",
     "", "eleven.annotate", kEdit, false, check_bookmark},
    {"set_code_type", "Set code type",
     "Marks what the bytes at an address are, like Hopper's Modify menu. Ghidra re-reads the code and the type is "
     "replayed every time the file opens. `procedure` starts a function at the address. Written to the user's "
     "project, logged and undoable; a suggestion when review is on.",
     R"({"type":"object","properties":{"address":{"type":"string","description":"Hexadecimal address"},)"
     R"("type":{"type":"string","enum":["code","procedure","byte","word","dword","qword","cstring","undefined",""],)"
     R"("description":"`code`, `procedure`, `byte`, `word`, `dword`, `qword`, `cstring`, `undefined`, or empty to read it as code again"}},)"
     R"("required":["address","type"],"additionalProperties":false})",
     "", "eleven.annotate", kEdit, false, check_code_type_args},
    {"set_number_format", "Set number format",
     "Chooses how the number in an instruction reads in assembly. Eleven draws the format; the binary and Ghidra's "
     "database are unchanged. Written to the user's project, logged and undoable; a suggestion when review is on.",
     R"({"type":"object","properties":{"address":{"type":"string","description":"Hexadecimal address of the instruction"},)"
     R"("format":{"type":"string","enum":["hex","decimal","char","offset","address",""],)"
     R"("description":"`hex`, `decimal`, `char`, `offset`, `address`, or empty for Ghidra's own"}},)"
     R"("required":["address","format"],"additionalProperties":false})",
     "", "eleven.annotate", kEdit, false, check_number_format_args},
    {"propose_patch", "Propose patch",
     "Suggests new bytes at an address. Patches are always suggestions: nothing is saved until the user accepts it "
     "in the Changes tab, and even then Eleven writes a patched copy, never the original file.",
     R"({"type":"object","properties":{"address":{"type":"string","description":"Hexadecimal address"},)"
     R"("bytes":{"type":"string","description":"Hex bytes, like `1f2003d5` or `90 90`"},)"
     R"("reason":{"type":"string","description":"One sentence on what the patch does, shown to the user"}},)"
     R"("required":["address","bytes","reason"],"additionalProperties":false})",
     "", "eleven.patch", TOOLHOST_TOOL_SUGGESTION, false, check_patch},
};

}  // namespace

std::span<const permission_row> permission_rows() { return kRows; }
std::span<const tool_spec> tool_specs() { return kTools; }

}  // namespace toolhost::eleven
