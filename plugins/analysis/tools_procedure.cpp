// One procedure at a time: where it is, what it is, its instructions, who calls it and what it
// references.
#include <algorithm>
#include <memory>
#include <set>

#include <absl/status/status.h>
#include <toolhost/analysis/function_body.hpp>

#include "procedure_facts.hpp"
#include "schemas.hpp"
#include "tools.hpp"

namespace toolhost::analysis_server {
namespace {

// Ghidra's bridge refuses procedure_assembly past this many instructions; so does this one,
// and past a megabyte of text, rather than answer with part of a procedure labelled whole.
constexpr size_t kMaxAssemblyInstructions = 100000;
constexpr size_t kMaxAssemblyBytes = 1 << 20;

struct resolved {
  std::shared_ptr<const an::program_analysis> analysis;
  const an::function* function = nullptr;
};

absl::StatusOr<resolved> procedure_of(tool_context& c) {
  auto a = c.analysis();
  if (!a.ok()) return a.status();
  auto f = resolve_procedure(**a, c.args.string("procedure"));
  if (!f.ok()) return f.status();
  return resolved{*a, *f};
}

absl::StatusOr<std::string> procedure_address(tool_context& c) {
  auto p = procedure_of(c);
  if (!p.ok()) return p.status();
  return sdk::quote(an::hex_address(p->function->address));
}

absl::StatusOr<std::string> procedure_info(tool_context& c) {
  auto p = procedure_of(c);
  if (!p.ok()) return p.status();
  const an::function& f = *p->function;
  const auto body = an::decode_function(p->analysis->img(), f, SIZE_MAX);
  uint64_t length = 0;
  for (const auto& b : body.blocks) length += b.end - b.start;
  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  key(w, "name");
  put_text(w, f.name);
  key(w, "entrypoint");
  put_address(w, f.address);
  key(w, "length");
  w.Uint64(length);
  key(w, "basicblock_count");
  w.Uint64(body.blocks.size());
  write_signature_and_locals(w, f);
  key(w, "classification");
  write_classification(w, f);
  w.EndObject();
  c.limitations.push_back(kNoLocals);
  return t.str();
}

absl::StatusOr<std::string> procedure_assembly(tool_context& c) {
  auto p = procedure_of(c);
  if (!p.ok()) return p.status();
  const auto body = an::decode_function(p->analysis->img(), *p->function, kMaxAssemblyInstructions);
  if (body.truncated) {
    return absl::OutOfRangeError(p->function->name + " has more than " + std::to_string(kMaxAssemblyInstructions) +
                                 " instructions; read it a page at a time with read_function_instructions.");
  }
  std::string text;
  for (const auto& insn : body.instructions) {
    if (!text.empty()) text += '\n';
    text += instruction_line(*p->analysis, insn);
    if (text.size() > kMaxAssemblyBytes) {
      return absl::OutOfRangeError("The assembly of " + p->function->name +
                                   " is more than 1 MiB of text; read it a "
                                   "page at a time with read_function_instructions.");
    }
  }
  if (body.instructions.empty()) c.limitations.push_back(kNoCode);
  return sdk::quote(text);
}

absl::StatusOr<std::string> procedure_pseudo_code(tool_context& c) {
  auto p = procedure_of(c);
  if (!p.ok()) return p.status();
  c.limitations.push_back(kNoDecompiler);
  return std::string("null");
}

absl::StatusOr<std::string> read_function_instructions(tool_context& c) {
  auto offset = c.integer("offset", 0, 0, 100000);
  if (!offset.ok()) return offset.status();
  auto limit = c.integer("limit", 64, 1, 500);
  if (!limit.ok()) return limit.status();
  auto p = procedure_of(c);
  if (!p.ok()) return p.status();
  const auto body = an::decode_function(p->analysis->img(), *p->function, static_cast<size_t>(*offset + *limit + 1));
  const auto& insns = body.instructions;
  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  key(w, "procedure");
  write_identity(w, *p->function);
  key(w, "instructions");
  write_bounded(w, insns.size(), static_cast<size_t>(*offset), static_cast<size_t>(*limit), body.truncated,
                [&](size_t i) { put_text(w, instruction_line(*p->analysis, insns[i])); });
  key(w, "instructions_scanned");
  w.Uint64(insns.size());
  key(w, "instruction_scan_truncated");
  w.Bool(body.truncated);
  key(w, "limitations");
  w.StartArray();
  put(w, kInstructionText);
  put(w, "This fast path decodes the procedure's own bytes; it reads no other procedure, name list or string list.");
  w.EndArray();
  w.EndObject();
  return t.str();
}

absl::StatusOr<std::string> address_list_answer(const std::set<uint64_t>& addresses, const std::string& what,
                                                const std::string& instead) {
  if (addresses.size() > kMaxAddressList) {
    return absl::OutOfRangeError(what + " " + std::to_string(addresses.size()) + " addresses, more than the " +
                                 std::to_string(kMaxAddressList) + " one answer holds; " + instead);
  }
  json_text t;
  t.w().StartArray();
  for (uint64_t a : addresses) put_address(t.w(), a);
  t.w().EndArray();
  return t.str();
}

absl::StatusOr<std::string> procedure_callers(tool_context& c) {
  auto p = procedure_of(c);
  if (!p.ok()) return p.status();
  const std::set<uint64_t> callers = caller_starts(*p->analysis, *p->function);
  return address_list_answer(callers, p->function->name + " has callers in",
                             "page through them with procedure_references (direction incoming).");
}

absl::StatusOr<std::string> procedure_callees(tool_context& c) {
  auto p = procedure_of(c);
  if (!p.ok()) return p.status();
  return address_list_answer(callee_starts(*p->analysis, *p->function), p->function->name + " calls",
                             "page through them with procedure_references (direction outgoing).");
}

absl::StatusOr<std::string> procedure_references(tool_context& c) {
  const std::string direction = c.args.string("direction", "outgoing");
  if (direction != "outgoing" && direction != "incoming") {
    return absl::InvalidArgumentError("direction must be incoming or outgoing.");
  }
  auto max_instructions = c.integer("max_instructions", 500, 1, 5000);
  if (!max_instructions.ok()) return max_instructions.status();
  auto offset = c.integer("offset", 0, 0, 9007199254740991);
  if (!offset.ok()) return offset.status();
  auto limit = c.integer("limit", 100, 1, 500);
  if (!limit.ok()) return limit.status();
  auto p = procedure_of(c);
  if (!p.ok()) return p.status();
  const an::program_analysis& a = *p->analysis;
  const auto body = an::decode_function(a.img(), *p->function, static_cast<size_t>(*max_instructions));
  const auto edges = reference_edges(a, body, direction == "incoming", false);
  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  key(w, "procedure");
  write_identity(w, *p->function);
  key(w, "direction");
  put(w, direction);
  key(w, "references");
  write_bounded(w, edges.size(), static_cast<size_t>(*offset), static_cast<size_t>(*limit), body.truncated,
                [&](size_t i) { write_reference_edge(w, a, edges[i]); });
  key(w, "instructions_scanned");
  w.Uint64(body.instructions.size());
  key(w, "instruction_scan_truncated");
  w.Bool(body.truncated);
  w.EndObject();
  return t.str();
}

absl::StatusOr<std::string> resolve_containing_procedure(tool_context& c) {
  auto address = c.address();
  if (!address.ok()) return address.status();
  auto a = c.analysis();
  if (!a.ok()) return a.status();
  json_text t;
  write_containing(t.w(), **a, *address);
  return t.str();
}

}  // namespace

std::vector<tool_def> procedure_tools() {
  using namespace schema;
  const std::string procedure_only =
      object({{"procedure", procedure_argument()}, {"document", document_argument()}}, {"procedure"}, false);
  std::vector<tool_def> out;
  out.push_back({"procedure_address", "Procedure Address",
                 "The entry address of a procedure named by symbol or FUN_ name, or of the procedure that contains an "
                 "address.",
                 procedure_only, text(), true, procedure_address});
  out.push_back(
      {"procedure_info", "Procedure Info",
       "A procedure's name, entry, length in bytes, basic block count, signature (the demangled C++ name when "
       "the symbol is mangled; else null) and whether it is an import thunk.",
       procedure_only,
       object(
           {{"name", text()},
            {"entrypoint", text()},
            {"length", integer()},
            {"basicblock_count", integer()},
            {"signature", nullable(text())},
            {"locals", array(object({{"description", text()}, {"provenance", text()}}, {"description", "provenance"}))},
            {"classification", classification()}},
           {"name", "entrypoint", "basicblock_count", "length", "signature", "locals", "classification"}),
       true, procedure_info});
  out.push_back({"procedure_assembly", "Procedure Assembly",
                 "The whole procedure as assembly, one instruction a line (\"0x401136: call 0x401030 <puts>\"). Past "
                 "100,000 instructions or 1 MiB it refuses: use read_function_instructions, which pages.",
                 procedure_only, text(), true, procedure_assembly});
  out.push_back({"procedure_pseudo_code", "Procedure Pseudo Code",
                 "Always null here: this server has no decompiler (the answer says so). Use procedure_assembly or "
                 "analyze_function.",
                 procedure_only, nullable(text()), true, procedure_pseudo_code});
  out.push_back(
      {"read_function_instructions", "Read Function Instructions",
       "A page of a procedure's instructions (default 64, at most 500; follow next_offset), decoded from its "
       "own bytes only: the fast way to look at code.",
       object({{"procedure", procedure_argument()},
               {"offset", ranged(0, 100000, 0, "Index of the first instruction")},
               {"limit", limit_argument(64, 500)},
               {"document", document_argument()}},
              {"procedure"}, false),
       object({{"procedure", identity()},
               {"instructions", bounded(text())},
               {"instructions_scanned", integer()},
               {"instruction_scan_truncated", flag()},
               {"limitations", array(text())}},
              {"procedure", "instructions", "instructions_scanned", "instruction_scan_truncated", "limitations"}),
       true, read_function_instructions});
  out.push_back({"procedure_callers", "Procedure Callers",
                 "The entry addresses of the procedures that call this one directly.", procedure_only, address_list(),
                 true, procedure_callers});
  out.push_back({"procedure_callees", "Procedure Callees",
                 "The entry addresses of the procedures this one calls directly (calls through registers or unresolved "
                 "pointers are not known).",
                 procedure_only, address_list(), true, procedure_callees});
  out.push_back({"procedure_references", "Procedure References",
                 "The references a procedure's first `max_instructions` instructions make (outgoing: calls, jumps, "
                 "reads, writes, addresses taken) or receive (incoming), typed, a page at a time.",
                 object({{"procedure", procedure_argument()},
                         {"direction", enumeration({"outgoing", "incoming"}, "outgoing (default) or incoming")},
                         {"max_instructions", ranged(1, 5000, 500, "How many instructions to scan")},
                         {"offset", offset_argument()},
                         {"limit", limit_argument(100, 500)},
                         {"document", document_argument()}},
                        {"procedure"}, false),
                 object({{"procedure", identity()},
                         {"direction", enumeration({"incoming", "outgoing"})},
                         {"references", bounded(reference_edge())},
                         {"instructions_scanned", integer()},
                         {"instruction_scan_truncated", flag()}},
                        {"procedure", "direction", "references", "instructions_scanned", "instruction_scan_truncated"}),
                 true, procedure_references});
  out.push_back(
      {"resolve_containing_procedure", "Resolve Containing Procedure",
       "The procedure an address (any instruction inside it) belongs to, or why there is none: the address is "
       "outside every segment, or in no procedure.",
       object({{"address", address_argument()}, {"document", document_argument()}}, {"address"}, false), containing(),
       true, resolve_containing_procedure});
  return out;
}

}  // namespace toolhost::analysis_server
