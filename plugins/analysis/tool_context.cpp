#include "tool_context.hpp"

#include "procedure_facts.hpp"

#include <algorithm>

#include <absl/status/status.h>
#include <toolhost/analysis/names.hpp>

namespace toolhost::analysis_server {
namespace {

std::string quoted(std::string_view s) { return "\"" + an::valid_utf8(s) + "\""; }

const char* reference_type(disasm::reference_kind k) {
  using K = disasm::reference_kind;
  switch (k) {
    case K::call: return "UNCONDITIONAL_CALL";
    case K::jump: return "UNCONDITIONAL_JUMP";
    case K::conditional_jump: return "CONDITIONAL_JUMP";
    case K::indirect_call:
    case K::indirect_jump: return "INDIRECTION";
    case K::read: return "READ";
    case K::write: return "WRITE";
    case K::read_write: return "READ_WRITE";
    case K::address: return "DATA";
  }
  return "DATA";
}

}  // namespace

absl::StatusOr<std::shared_ptr<document>> tool_context::open_document() {
  auto doc = state.documents.find(args.string("document"));
  if (!doc.ok()) return doc.status();
  used = *doc;
  return doc;
}

absl::StatusOr<std::shared_ptr<const an::program_analysis>> tool_context::analysis() {
  auto doc = open_document();
  if (!doc.ok()) return doc.status();
  if (auto done = (*doc)->job->finished()) return done;
  return (*doc)->job->wait([this] { return call.cancelled(); },
                           [this](const progress_report& r) { call.progress(r.done, r.total, r.message); });
}

absl::StatusOr<int64_t> tool_context::integer(std::string_view name, int64_t fallback, int64_t low,
                                              int64_t high) const {
  const rapidjson::Value* v = args.get(name);
  if (v == nullptr) return fallback;
  if (!v->IsInt64() || v->GetInt64() < low || v->GetInt64() > high) {
    return absl::InvalidArgumentError(std::string(name) + " must be a whole number from " + std::to_string(low) +
                                      " to " + std::to_string(high) + ".");
  }
  return v->GetInt64();
}

absl::StatusOr<uint64_t> tool_context::address(std::string_view name) const {
  const rapidjson::Value* v = args.get(name);
  if (v == nullptr || !v->IsString()) {
    return absl::InvalidArgumentError(
        "Give " + std::string(name) +
        " as a hexadecimal address, like 0x401136: this server has no cursor to default to.");
  }
  auto a = an::parse_hex_address(sdk::as_view(*v));
  if (!a) {
    return absl::InvalidArgumentError(quoted(sdk::as_view(*v)) +
                                      " is not an address: write it in hexadecimal, like 0x401136.");
  }
  return *a;
}

absl::StatusOr<const an::function*> resolve_procedure(const an::program_analysis& a, std::string_view text) {
  if (text.empty())
    return absl::InvalidArgumentError("Name the procedure, or give an address inside it like 0x401136.");
  const auto& functions = a.functions();
  const bool prefixed = text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X');
  if (!prefixed) {
    const auto named = functions.all_named(text);
    if (named.size() == 1) return named.front();
    if (named.size() > 1) {
      // Local functions in different files may share a name: an address says which one.
      std::string at;
      for (size_t i = 0; i < named.size() && i < 8; ++i)
        at += (i == 0 ? "" : ", ") + an::hex_address(named[i]->address);
      if (named.size() > 8) at += ", ...";
      return absl::InvalidArgumentError(std::to_string(named.size()) + " procedures are named " + quoted(text) +
                                        " (at " + at + "); give the address of the one you mean.");
    }
    // An alias: another symbol at a function's start (a weak or versioned name).
    if (const an::name_entry* n = a.find_name(text)) {
      if (const an::function* f = functions.starting(n->address)) return f;
    }
    if (auto fun = an::parse_default_function_name(text)) {
      if (const an::function* f = functions.starting(*fun)) return f;
    }
  }
  if (auto address = an::parse_hex_address(text)) {
    if (const an::function* f = functions.containing(*address)) return f;
    if (prefixed) {
      return absl::NotFoundError("No procedure contains " + an::hex_address(*address) +
                                 " (resolve_containing_procedure says whether it is code at all).");
    }
  }
  return absl::NotFoundError("There is no procedure named " + quoted(text) +
                             "; search_procedures finds names by part, and an address like 0x401136 works too.");
}

void write_classification(json_writer& w, const an::function& f, bool with_provenance) {
  w.StartObject();
  key(w, "external");
  w.Bool(false);
  key(w, "thunk");
  w.Bool(f.is_thunk());
  // A thunk's target is the import in another file; its address is unknown until load time.
  key(w, "thunk_target");
  w.Null();
  if (with_provenance) {
    key(w, "provenance");
    put(w, kProviderId);
  }
  w.EndObject();
}

void write_identity_fields(json_writer& w, const an::function& f) {
  key(w, "address");
  put_address(w, f.address);
  key(w, "name");
  put_text(w, f.name);
  key(w, "classification");
  write_classification(w, f);
}

void write_signature_and_locals(json_writer& w, const an::function& f) {
  key(w, "signature");
  if (auto s = signature_of(f))
    put_text(w, *s);
  else
    w.Null();
  key(w, "locals");
  w.StartArray();
  w.EndArray();
}

void write_extent_fields(json_writer& w, std::string_view name, uint64_t start, uint64_t end) {
  key(w, "name");
  put_text(w, name);
  key(w, "start");
  put_address(w, start);
  key(w, "end");
  put_address(w, end);
}

void write_identity(json_writer& w, const an::function& f) {
  w.StartObject();
  write_identity_fields(w, f);
  w.EndObject();
}

void write_identity_or_null(json_writer& w, const an::function* f) {
  if (f != nullptr)
    write_identity(w, *f);
  else
    w.Null();
}

void write_reference_edge(json_writer& w, const an::program_analysis& a, const disasm::code_reference& r) {
  using K = disasm::reference_kind;
  w.StartObject();
  key(w, "source_address");
  put_address(w, r.from);
  key(w, "target_address");
  put_address(w, r.to);
  key(w, "source_procedure");
  write_identity_or_null(w, a.functions().containing(r.from));
  key(w, "target_procedure");
  write_identity_or_null(w, a.functions().containing(r.to));
  key(w, "kind");
  w.StartObject();
  key(w, "available");
  w.Bool(true);
  key(w, "provenance");
  put(w, kProviderId);
  key(w, "type");
  put(w, reference_type(r.kind));
  const bool flow = disasm::is_flow(r.kind);
  const bool through_slot = r.kind == K::indirect_call || r.kind == K::indirect_jump;
  const auto flag = [&w](const char* name, bool v) {
    key(w, name);
    w.Bool(v);
  };
  flag("flow", flow);
  flag("call", r.kind == K::call || r.kind == K::indirect_call);
  flag("jump", r.kind == K::jump || r.kind == K::conditional_jump || r.kind == K::indirect_jump);
  flag("data", !flow);
  flag("read", r.kind == K::read || r.kind == K::read_write || through_slot);
  flag("write", r.kind == K::write || r.kind == K::read_write);
  flag("indirect", through_slot);
  flag("computed", false);
  flag("conditional", r.kind == K::conditional_jump);
  flag("terminal", false);
  flag("primary", true);
  key(w, "operand_index");
  w.Int(r.operand);
  flag("external", false);
  w.EndObject();
  w.EndObject();
}

void write_containing(json_writer& w, const an::program_analysis& a, uint64_t address) {
  const an::function* f = a.functions().containing(address);
  w.StartObject();
  key(w, "query_address");
  put_address(w, address);
  key(w, "found");
  w.Bool(f != nullptr);
  key(w, "procedure");
  write_identity_or_null(w, f);
  if (f == nullptr) {
    key(w, "reason");
    put(w, a.img().section_at(address) != nullptr ? "not_in_procedure" : "outside_segments");
  }
  w.EndObject();
}

}  // namespace toolhost::analysis_server
