// REA's enhanced tools, built from the same facts as the others: a procedure's dossier, the
// call graph around it, the references to a name, and the code that uses a string.
#include <map>
#include <set>

#include <absl/status/status.h>
#include <toolhost/analysis/function_body.hpp>

#include "procedure_facts.hpp"
#include "schemas.hpp"
#include "tools.hpp"

namespace toolhost::analysis_server {
namespace {

// get_call_graph refuses past this many nodes: a depth-5 walk from main of a large program
// reaches much of it, more than one answer should carry.
constexpr size_t kMaxGraphNodes = 1000;

absl::StatusOr<int64_t> collection_offset(const tool_context& c, std::string_view name) {
  const rapidjson::Value* all = c.args.get("collection_offset");
  if (all == nullptr) return 0;
  const rapidjson::Value* v = sdk::member(*all, name);
  if (v == nullptr) return 0;
  if (!v->IsInt64() || v->GetInt64() < 0) {
    return absl::InvalidArgumentError("collection_offset." + std::string(name) + " must be a whole number, 0 or more.");
  }
  return v->GetInt64();
}

absl::StatusOr<std::string> analyze_function(tool_context& c) {
  auto limit = c.integer("limit", 100, 1, 500);
  if (!limit.ok()) return limit.status();
  auto max_instructions = c.integer("max_instructions", 500, 1, 5000);
  if (!max_instructions.ok()) return max_instructions.status();
  auto max_chars = c.integer("max_pseudocode_chars", 20000, 1, 100000);
  if (!max_chars.ok()) return max_chars.status();
  auto pseudocode_offset = c.integer("pseudocode_offset", 0, 0, 9007199254740991);
  if (!pseudocode_offset.ok()) return pseudocode_offset.status();
  auto assembly_offset = c.integer("assembly_offset", 0, 0, 9007199254740991);
  if (!assembly_offset.ok()) return assembly_offset.status();
  std::map<std::string, size_t, std::less<>> offsets;
  for (const char* name : {"basic_blocks", "callees", "callers", "comments", "incoming_references",
                           "outgoing_references", "referenced_names", "referenced_strings"}) {
    auto o = collection_offset(c, name);
    if (!o.ok()) return o.status();
    offsets[name] = static_cast<size_t>(*o);
  }
  const bool include_assembly = c.args.boolean("include_assembly", false);
  auto a = c.analysis();
  if (!a.ok()) return a.status();
  auto resolved = resolve_procedure(**a, c.args.string("procedure"));
  if (!resolved.ok()) return resolved.status();
  const an::program_analysis& an_ = **a;
  const an::function& f = **resolved;
  const auto body = an::decode_function(an_.img(), f, static_cast<size_t>(*max_instructions));
  const bool scan_truncated = body.truncated;
  const size_t lim = static_cast<size_t>(*limit);

  std::vector<const an::function*> callers, callees;
  for (uint64_t s : caller_starts(an_, f)) callers.push_back(an_.functions().starting(s));
  for (uint64_t s : callee_starts(an_, f)) callees.push_back(an_.functions().starting(s));
  const auto incoming = reference_edges(an_, body, true, true);
  const auto outgoing = reference_edges(an_, body, false, false);
  struct referenced {
    uint64_t address, source;
    std::string value;
  };
  std::vector<referenced> strings, names;
  for (const auto& r : outgoing) {
    if (const an::string_entry* s = an_.string_at(r.to)) {
      strings.push_back({r.to, r.from, an::string_text(an_.img(), *s, 4096)});
    }
    if (const an::name_entry* n = an_.name_at(r.to)) names.push_back({r.to, r.from, n->text});
  }
  const auto by_address = [](const referenced& x, const referenced& y) {
    return x.address != y.address ? x.address < y.address : x.source < y.source;
  };
  std::sort(strings.begin(), strings.end(), by_address);
  std::sort(names.begin(), names.end(), by_address);

  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  key(w, "procedure");
  w.StartObject();
  write_identity_fields(w, f);
  write_signature_and_locals(w, f);
  w.EndObject();
  key(w, "pseudocode");
  w.StartObject();
  key(w, "text");
  put(w, "");
  key(w, "total_chars");
  w.Uint64(0);
  key(w, "returned_chars");
  w.Uint64(0);
  key(w, "truncated");
  w.Bool(false);
  key(w, "next_offset");
  w.Null();
  w.EndObject();
  key(w, "assembly");
  if (include_assembly) {
    write_bounded(w, body.instructions.size(), static_cast<size_t>(*assembly_offset),
                  static_cast<size_t>(*max_instructions), scan_truncated,
                  [&](size_t i) { put_text(w, instruction_line(an_, body.instructions[i])); });
  } else {
    write_bounded(w, 0, 0, 1, false, [](size_t) {});
  }
  key(w, "comments");
  write_bounded(w, 0, offsets["comments"], lim, scan_truncated, [](size_t) {});
  for (const auto& [field, list] : {std::pair{"callers", &callers}, std::pair{"callees", &callees}}) {
    key(w, field);
    write_bounded(w, list->size(), offsets[field], lim, false, [&](size_t i) { write_identity(w, *(*list)[i]); });
  }
  key(w, "incoming_references");
  write_bounded(w, incoming.size(), offsets["incoming_references"], lim, scan_truncated,
                [&](size_t i) { write_reference_edge(w, an_, incoming[i]); });
  key(w, "outgoing_references");
  write_bounded(w, outgoing.size(), offsets["outgoing_references"], lim, scan_truncated,
                [&](size_t i) { write_reference_edge(w, an_, outgoing[i]); });
  for (const auto& [field, list] : {std::pair{"referenced_strings", &strings}, std::pair{"referenced_names", &names}}) {
    key(w, field);
    write_bounded(w, list->size(), offsets[field], lim, scan_truncated, [&](size_t i) {
      const referenced& r = (*list)[i];
      w.StartObject();
      key(w, "address");
      put_address(w, r.address);
      key(w, "value");
      put_text(w, r.value);
      key(w, "source_address");
      put_address(w, r.source);
      w.EndObject();
    });
  }
  key(w, "basic_blocks");
  write_bounded(w, body.blocks.size(), offsets["basic_blocks"], lim, scan_truncated, [&](size_t i) {
    const an::basic_block& b = body.blocks[i];
    w.StartObject();
    key(w, "start");
    put_address(w, b.start);
    key(w, "end");
    put_address(w, b.end);
    key(w, "successors");
    w.StartArray();
    for (uint64_t s : b.successors) put_address(w, s);
    w.EndArray();
    w.EndObject();
  });
  key(w, "instruction_scan");
  w.StartObject();
  key(w, "scanned");
  w.Uint64(body.instructions.size());
  key(w, "truncated");
  w.Bool(scan_truncated);
  w.EndObject();
  key(w, "native_api");
  w.Null();
  c.result_lists_limitations = true;
  key(w, "limitations");
  w.StartArray();
  for (const char* l : {kNoDecompiler, kNoLocals, kInstructionText,
                        "Comments live in the Eleven project (the eleven server's list_marks), not in this analysis: "
                        "comments is empty.",
                        "Calls and jumps through registers or unresolved pointers are not edges."}) {
    put(w, l);
    c.limitations.push_back(l);
  }
  w.EndArray();
  w.EndObject();
  return t.str();
}

void write_node_error(json_writer& w, uint64_t address, std::string_view message) {
  w.StartObject();
  key(w, "address");
  put_address(w, address);
  key(w, "status");
  put(w, "error");
  key(w, "error");
  w.StartObject();
  key(w, "code");
  put(w, "invalid_request");
  key(w, "category");
  put(w, "invalid_input");
  key(w, "message");
  put_text(w, message);
  key(w, "retryable");
  w.Bool(false);
  key(w, "remediation");
  w.StartObject();
  key(w, "action");
  put(w, "Give the address of a procedure (list_procedures, resolve_containing_procedure).");
  key(w, "restart_required");
  w.Bool(false);
  w.EndObject();
  w.EndObject();
  w.EndObject();
}

absl::StatusOr<std::string> get_call_graph(tool_context& c) {
  auto start = c.address();
  if (!start.ok()) return start.status();
  const std::string direction = c.args.string("direction", "forward");
  if (direction != "forward" && direction != "backward")
    return absl::InvalidArgumentError("direction must be forward or backward.");
  auto depth = c.integer("depth", 2, 1, 5);
  if (!depth.ok()) return depth.status();
  auto a = c.analysis();
  if (!a.ok()) return a.status();
  const an::program_analysis& an_ = **a;
  const bool forward = direction == "forward";

  // Breadth first, one level per depth, each procedure once (REA's walk).
  struct node {
    uint64_t address;
    int level;
  };
  std::vector<node> queue{{*start, 0}};
  std::set<uint64_t> seen{*start};
  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  int open_level = -1;
  for (size_t i = 0; i < queue.size(); ++i) {
    const node n = queue[i];
    if (n.level >= *depth) continue;
    if (n.level != open_level) {
      if (open_level >= 0) w.EndArray();
      key(w, std::to_string(n.level));
      w.StartArray();
      open_level = n.level;
    }
    const an::function* f = an_.functions().containing(n.address);
    if (f == nullptr) {
      write_node_error(w, n.address, "No procedure contains " + an::hex_address(n.address) + ".");
      continue;
    }
    const std::set<uint64_t> related = forward ? callee_starts(an_, *f) : caller_starts(an_, *f);
    w.StartObject();
    key(w, "address");
    put_address(w, n.address);
    key(w, "status");
    put(w, "ok");
    key(w, "calls");
    w.StartArray();
    for (uint64_t r : related) put_address(w, r);
    w.EndArray();
    w.EndObject();
    if (n.level + 1 >= *depth) continue;
    for (uint64_t r : related) {
      if (!seen.insert(r).second) continue;
      queue.push_back({r, n.level + 1});
      if (queue.size() > kMaxGraphNodes) {
        return absl::OutOfRangeError(
            "The call graph " + std::string(forward ? "from " : "into ") + an::hex_address(*start) +
            " reaches more than " + std::to_string(kMaxGraphNodes) + " procedures within depth " +
            std::to_string(*depth) +
            "; ask for a smaller depth, or walk it with procedure_callees and procedure_callers.");
      }
    }
  }
  if (open_level >= 0) w.EndArray();
  w.EndObject();
  return t.str();
}

absl::StatusOr<std::string> find_xrefs_to_name(tool_context& c) {
  const std::string name = c.args.string("name");
  auto a = c.analysis();
  if (!a.ok()) return a.status();
  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  const an::name_entry* n = (*a)->find_name(name);
  if (n == nullptr) {
    key(w, "status");
    put(w, "unresolved");
    key(w, "name");
    put_text(w, name);
    key(w, "reason");
    put(w, "name_not_found");
    w.EndObject();
    return t.str();
  }
  const std::set<uint64_t> sources = reference_sources(**a, n->address);
  if (sources.size() > kMaxAddressList) {
    return absl::OutOfRangeError(name + " (" + an::hex_address(n->address) + ") is referenced from " +
                                 std::to_string(sources.size()) + " places, more than the " +
                                 std::to_string(kMaxAddressList) +
                                 " one answer holds; page through them with "
                                 "procedure_references (direction incoming).");
  }
  key(w, "status");
  put(w, "resolved");
  key(w, "name");
  put_text(w, name);
  key(w, "address");
  put_address(w, n->address);
  key(w, "xrefs");
  w.StartArray();
  for (uint64_t s : sources) put_address(w, s);
  w.EndArray();
  w.EndObject();
  return t.str();
}

// Strings containing `query`, then the code that refers to each and the procedure that code is
// in. Operations are counted as REA counts provider calls: one for the search over every
// string, one per match's references, one per reference's containing procedure.
absl::StatusOr<std::string> find_code_for_string(tool_context& c) {
  const std::string query = c.args.string("query");
  if (query.empty()) return absl::InvalidArgumentError("query must not be empty.");
  const bool case_sensitive = c.args.boolean("case_sensitive", false);
  auto limit = c.integer("limit", 20, 1, 100);
  if (!limit.ok()) return limit.status();
  auto budget = c.integer("max_operations", 20, 1, 100);
  if (!budget.ok()) return budget.status();
  auto a = c.analysis();
  if (!a.ok()) return a.status();
  const an::program_analysis& an_ = **a;
  const auto fold = [](std::string s) {
    for (char& ch : s) {
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    }
    return s;
  };
  const std::string needle = case_sensitive ? query : fold(query);
  struct match {
    uint64_t address;
    std::string value;
  };
  std::vector<match> matches;
  int64_t operations = 1;
  std::set<std::string> residual;
  for (const an::string_entry& s : an_.strings()) {
    std::string value = an::string_text(an_.img(), s, SIZE_MAX);
    if ((case_sensitive ? value : fold(value)).find(needle) == std::string::npos) continue;
    matches.push_back({s.address, std::move(value)});
    if (matches.size() >= static_cast<size_t>(*limit)) {
      residual.insert("Literal matches reached the configured limit.");
      break;
    }
  }
  struct reference {
    uint64_t target, source;
  };
  std::vector<reference> references;
  bool stop = false;
  for (const match& m : matches) {
    if (stop) break;
    if (operations >= *budget) {
      residual.insert("Reference traversal stopped at the operation budget.");
      break;
    }
    ++operations;
    for (uint64_t source : reference_sources(an_, m.address)) {
      if (operations >= *budget) {
        residual.insert("Containing-procedure resolution stopped at the operation budget.");
        break;
      }
      ++operations;
      references.push_back({m.address, source});
      if (references.size() >= static_cast<size_t>(*limit)) {
        residual.insert("Reference results reached the configured limit.");
        stop = true;
        break;
      }
    }
  }
  if (operations >= *budget) residual.insert("Investigation reached the operation budget.");

  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  key(w, "query");
  put_text(w, query);
  key(w, "search_mode");
  put(w, "literal");
  key(w, "operations_used");
  w.Int64(operations);
  key(w, "operation_budget");
  w.Int64(*budget);
  key(w, "matches");
  w.StartArray();
  for (const match& m : matches) {
    w.StartObject();
    key(w, "type");
    put(w, "string");
    key(w, "address");
    put_address(w, m.address);
    key(w, "value");
    put(w, first_code_points(m.value, 4096, nullptr));
    w.EndObject();
  }
  w.EndArray();
  key(w, "references");
  w.StartArray();
  for (const reference& r : references) {
    w.StartObject();
    key(w, "target_address");
    put_address(w, r.target);
    key(w, "source_address");
    put_address(w, r.source);
    key(w, "containing_procedure");
    write_containing(w, an_, r.source);
    w.EndObject();
  }
  w.EndArray();
  key(w, "truncated");
  w.Bool(!residual.empty());
  key(w, "residual_unknowns");
  w.StartArray();
  for (const std::string& r : residual) put(w, r);
  w.EndArray();
  w.EndObject();
  return t.str();
}

}  // namespace

std::vector<tool_def> workflow_tools() {
  using namespace schema;
  const std::string bounded_identity = bounded(identity());
  const std::string referenced = bounded(object({{"address", text()}, {"value", text()}, {"source_address", text()}},
                                                {"address", "value", "source_address"}));
  const std::string offsets = object({{"basic_blocks", integer()},
                                      {"callees", integer()},
                                      {"callers", integer()},
                                      {"comments", integer()},
                                      {"incoming_references", integer()},
                                      {"outgoing_references", integer()},
                                      {"referenced_names", integer()},
                                      {"referenced_strings", integer()}},
                                     {});
  const std::string pseudocode = object({{"text", text()},
                                         {"total_chars", integer()},
                                         {"returned_chars", integer()},
                                         {"truncated", flag()},
                                         {"next_offset", nullable(integer())}},
                                        {"text", "total_chars", "returned_chars", "truncated", "next_offset"});
  std::vector<tool_def> out;
  out.push_back(
      {"analyze_function", "Analyze Function",
       "Everything about one procedure in one answer, each list bounded (`limit`, and `collection_offset` to page a "
       "list): identity and signature, optional assembly, callers and callees, typed incoming and outgoing "
       "references, the strings and names it refers to, and its basic blocks with successors. pseudocode is empty: "
       "no decompiler runs here.",
       object({{"procedure", procedure_argument()},
               {"include_assembly", flag("Include the assembly (default false)")},
               {"limit", limit_argument(100, 500)},
               {"max_instructions", ranged(1, 5000, 500, "How many instructions to scan")},
               {"max_pseudocode_chars", ranged(1, 100000, 20000, "Longest pseudocode page")},
               {"pseudocode_offset", integer("Where the pseudocode page starts")},
               {"assembly_offset", integer("Where the assembly page starts")},
               {"collection_offset", offsets}},
              {"procedure"}),
       object({{"procedure", object({{"address", text()},
                                     {"name", text()},
                                     {"classification", classification()},
                                     {"signature", nullable(text())},
                                     {"locals", array(object({{"description", text()}, {"provenance", text()}},
                                                             {"description", "provenance"}))}},
                                    {"address", "name", "classification", "signature", "locals"})},
               {"pseudocode", pseudocode},
               {"assembly", bounded(text())},
               {"comments",
                bounded(object({{"address", text()}, {"kind", enumeration({"comment", "inline"})}, {"text", text()}},
                               {"address", "kind", "text"}))},
               {"callers", bounded_identity},
               {"callees", bounded_identity},
               {"incoming_references", bounded(reference_edge())},
               {"outgoing_references", bounded(reference_edge())},
               {"referenced_strings", referenced},
               {"referenced_names", referenced},
               {"basic_blocks", bounded(object({{"start", text()}, {"end", text()}, {"successors", array(text())}},
                                               {"start", "end", "successors"}))},
               {"instruction_scan", object({{"scanned", integer()}, {"truncated", flag()}}, {"scanned", "truncated"})},
               {"native_api", R"({"type":"null"})"},
               {"limitations", array(text())}},
              {"procedure", "pseudocode", "assembly", "comments", "callers", "callees", "incoming_references",
               "outgoing_references", "referenced_strings", "referenced_names", "basic_blocks", "instruction_scan",
               "native_api", "limitations"}),
       true, analyze_function});
  const std::string error = object({{"code", text()},
                                    {"category", text()},
                                    {"message", text()},
                                    {"retryable", flag()},
                                    {"remediation", object({{"action", text()}, {"restart_required", flag()}},
                                                           {"action", "restart_required"}, false)}},
                                   {"code", "category", "message", "retryable", "remediation"}, false);
  out.push_back(
      {"get_call_graph", "Get Call Graph",
       "The procedures reachable from one by direct calls (forward) or that reach it (backward), level by "
       "level up to `depth` (at most 5): each level's key is its depth, each node lists its calls.",
       object({{"address", text("The procedure's hexadecimal address")},
               {"direction", enumeration({"forward", "backward"}, "forward (callees, default) or backward (callers)")},
               {"depth", ranged(1, 5, 2, "How many levels")}},
              {"address"}),
       R"({"type":"object","additionalProperties":{"type":"array","items":)" +
           one_of({object({{"address", text()}, {"status", constant(R"("ok")")}, {"calls", array(text())}},
                          {"address", "status", "calls"}),
                   object({{"address", text()}, {"status", constant(R"("error")")}, {"error", error}},
                          {"address", "status", "error"})}) +
           "}}",
       true, get_call_graph});
  out.push_back({"find_xrefs_to_name", "Find Xrefs To Name",
                 "The address of an exact name (the lowest, when several places share it) and the instructions that "
                 "refer to it; status unresolved with reason name_not_found when nothing has that name.",
                 object({{"name", text("The exact name, like puts or FUN_00401136")}}, {"name"}),
                 one_of({object({{"status", constant(R"("resolved")")},
                                 {"name", text()},
                                 {"address", text()},
                                 {"xrefs", array(text())}},
                                {"status", "name", "address", "xrefs"}),
                         object({{"status", constant(R"("unresolved")")},
                                 {"name", text()},
                                 {"reason", constant(R"("name_not_found")")}},
                                {"status", "name", "reason"})}),
                 true, find_xrefs_to_name});
  out.push_back(
      {"find_code_for_string", "Find Code For String",
       "The strings that contain `query`, the instructions that refer to each, and the procedure each of "
       "those is in, within an operation budget; what the budget or limit cut is listed in residual_unknowns.",
       object({{"query", text("Text the string contains")},
               {"case_sensitive", flag("Match case (default false)")},
               {"limit", ranged(1, 100, 20, "How many matches and references at most")},
               {"max_operations", ranged(1, 100, 20, "The operation budget")}},
              {"query"}),
       object({{"query", text()},
               {"search_mode", constant(R"("literal")")},
               {"operations_used", integer()},
               {"operation_budget", integer()},
               {"matches",
                array(object({{"type", enumeration({"string", "procedure"})}, {"address", text()}, {"value", text()}},
                             {"type", "address", "value"}))},
               {"references",
                array(object(
                    {{"target_address", text()}, {"source_address", text()}, {"containing_procedure", containing()}},
                    {"target_address", "source_address", "containing_procedure"}))},
               {"truncated", flag()},
               {"residual_unknowns", array(text())}},
              {"query", "search_mode", "operations_used", "operation_budget", "matches", "references", "truncated",
               "residual_unknowns"}),
       true, find_code_for_string});
  return out;
}

}  // namespace toolhost::analysis_server
