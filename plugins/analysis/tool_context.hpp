// What every tool's handler works with: the server's documents and evidence, the call's
// arguments, and the few lookups every tool shares (which document, which procedure, which
// address), each failing with a sentence the agent can act on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>
#include <toolhost/analysis/program_analysis.hpp>
#include <toolhost/sdk/sdk.hpp>

#include "document_store.hpp"
#include "evidence_store.hpp"
#include "json_out.hpp"

namespace toolhost::analysis_server {

namespace sdk = toolhost::sdk;

struct server_state {
  explicit server_state(store_options o, size_t evidence_bytes) : documents(o), evidence(evidence_bytes) {}
  document_store documents;
  evidence_store evidence;
};

class tool_context {
 public:
  tool_context(server_state& state, const sdk::args& args, sdk::call& call) : state(state), args(args), call(call) {}

  server_state& state;
  const sdk::args& args;
  sdk::call& call;
  std::shared_ptr<document> used;         // the document the answer is about (its evidence subject)
  std::vector<std::string> limitations;   // recorded with the evidence (and told in the answer's text
  bool result_lists_limitations = false;  // ... unless the result lists them itself)

  // The document the `document` argument names, or the one opened last.
  absl::StatusOr<std::shared_ptr<document>> open_document();
  // That document's analysis, waiting for it (with progress) while it runs.
  absl::StatusOr<std::shared_ptr<const an::program_analysis>> analysis();

  // An integer argument with its default and bounds; the error names both.
  absl::StatusOr<int64_t> integer(std::string_view name, int64_t fallback, int64_t low, int64_t high) const;
  // A required hexadecimal address argument (0x401136 or 401136).
  absl::StatusOr<uint64_t> address(std::string_view name = "address") const;
};

// A procedure by name (a symbol, an import thunk's name, FUN_<hex>) or by any address inside it.
absl::StatusOr<const an::function*> resolve_procedure(const an::program_analysis& a, std::string_view text);

// REA's classification object; list_procedures' facts are the same without the provenance.
void write_classification(json_writer& w, const an::function& f, bool with_provenance = true);
// REA's procedure identity {address, name, classification}; the fields alone for answers that add some.
void write_identity_fields(json_writer& w, const an::function& f);
void write_identity(json_writer& w, const an::function& f);
// REA's `signature` (null when unknown) and `locals` (always empty: no decompiler) fields.
void write_signature_and_locals(json_writer& w, const an::function& f);
// The {name, start, end} fields that segments and sections begin with.
void write_extent_fields(json_writer& w, std::string_view name, uint64_t start, uint64_t end);
void write_identity_or_null(json_writer& w, const an::function* f);
// REA's reference edge {source_address, target_address, source_procedure, target_procedure, kind}.
void write_reference_edge(json_writer& w, const an::program_analysis& a, const disasm::code_reference& r);
// resolve_containing_procedure's answer for one address.
void write_containing(json_writer& w, const an::program_analysis& a, uint64_t address);

// How many addresses one string[] answer (xrefs, callers, callees) may hold before the tool
// refuses and names the paged alternative, so no answer floods the agent's context.
inline constexpr size_t kMaxAddressList = 10000;

}  // namespace toolhost::analysis_server
