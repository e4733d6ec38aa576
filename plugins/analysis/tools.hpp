// The tools, REA's read-only catalog, each a name, its schemas and a handler that writes the
// `result` value of REA's envelope. plugin.cpp registers them and wraps every answer.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

#include "tool_context.hpp"

namespace toolhost::analysis_server {

struct tool_def {
  std::string name;
  std::string title;
  std::string description;
  std::string input_schema;
  std::string result_schema;  // of `result` alone
  bool evidence = true;       // REA's session tools (open_binary) answer {result} without evidence
  std::function<absl::StatusOr<std::string>(tool_context&)> run;  // the result as JSON text
};

std::vector<tool_def> session_tools();  // open_binary, list_documents
std::vector<tool_def>
listing_tools();  // binary_overview, list_segments, list_procedures, list_names, list_strings, search_*
std::vector<tool_def> procedure_tools();  // procedure_*, read_function_instructions, resolve_containing_procedure
std::vector<tool_def> address_tools();    // xrefs, address_name, read_bytes, address_to_file_offset
std::vector<tool_def> workflow_tools();   // analyze_function, get_call_graph, find_xrefs_to_name, find_code_for_string

// Up to `max` code points of `text` (valid UTF-8 assumed); `*truncated` says whether it was cut.
std::string first_code_points(std::string_view text, size_t max, bool* truncated);

}  // namespace toolhost::analysis_server
