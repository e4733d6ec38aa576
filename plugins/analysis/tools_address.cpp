// One address at a time: who refers to it, what it is called, its bytes and where they are in
// the file.
#include <set>

#include <absl/status/status.h>

#include "procedure_facts.hpp"
#include "schemas.hpp"
#include "tools.hpp"

namespace toolhost::analysis_server {
namespace {

absl::StatusOr<std::string> xrefs(tool_context& c) {
  auto address = c.address();
  if (!address.ok()) return address.status();
  auto a = c.analysis();
  if (!a.ok()) return a.status();
  const std::set<uint64_t> sources = reference_sources(**a, *address);
  if (sources.size() > kMaxAddressList) {
    return absl::OutOfRangeError(an::hex_address(*address) + " is referenced from " + std::to_string(sources.size()) +
                                 " places, more than the " + std::to_string(kMaxAddressList) +
                                 " one answer holds; for a procedure, page through them with procedure_references "
                                 "(direction incoming).");
  }
  json_text t;
  t.w().StartArray();
  for (uint64_t s : sources) put_address(t.w(), s);
  t.w().EndArray();
  return t.str();
}

absl::StatusOr<std::string> address_name(tool_context& c) {
  auto address = c.address();
  if (!address.ok()) return address.status();
  auto a = c.analysis();
  if (!a.ok()) return a.status();
  const an::name_entry* n = (*a)->name_at(*address);
  if (n == nullptr) return std::string("null");
  return sdk::quote(an::valid_utf8(n->text));
}

absl::StatusOr<std::string> read_bytes(tool_context& c) {
  auto address = c.address();
  if (!address.ok()) return address.status();
  auto length = c.integer("length", 256, 1, 4096);
  if (!length.ok()) return length.status();
  auto doc = c.open_document();
  if (!doc.ok()) return doc.status();
  const an::image& img = (*doc)->img;
  auto bytes = img.read(*address, static_cast<size_t>(*length));
  if (!bytes.ok()) {
    return absl::OutOfRangeError(an::hex_address(*address) + " is not in any segment of " + (*doc)->name +
                                 " (list_segments shows what is mapped).");
  }
  // The privacy setting "ask before sending a whole file": a read that covers all of a small file.
  if (auto offset = img.file_offset(*address); offset && *offset == 0 && bytes->size() >= img.bytes().size()) {
    if (!c.call.confirm_whole_file((*doc)->path)) {
      return absl::PermissionDeniedError("The user did not allow sending the whole of " + (*doc)->name + ".");
    }
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes->size() * 2);
  for (unsigned char b : *bytes) {
    hex.push_back(kHex[b >> 4]);
    hex.push_back(kHex[b & 15]);
  }
  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  key(w, "address");
  put_address(w, *address);
  key(w, "bytes_hex");
  put(w, hex);
  key(w, "requested_bytes");
  w.Uint64(static_cast<uint64_t>(*length));
  key(w, "returned_bytes");
  w.Uint64(bytes->size());
  key(w, "complete");
  w.Bool(bytes->size() == static_cast<size_t>(*length));
  w.EndObject();
  if (bytes->size() < static_cast<size_t>(*length)) {
    c.limitations.push_back("The read stopped where the mapped memory ends.");
  }
  return t.str();
}

absl::StatusOr<std::string> address_to_file_offset(tool_context& c) {
  auto address = c.address();
  if (!address.ok()) return address.status();
  auto doc = c.open_document();
  if (!doc.ok()) return doc.status();
  const an::image& img = (*doc)->img;
  auto offset = img.file_offset(*address);
  if (!offset) {
    const bool mapped = img.section_at(*address) != nullptr;
    return absl::NotFoundError(an::hex_address(*address) + (mapped
                                                                ? " has no bytes in the file (it is zero-filled memory "
                                                                  "such as .bss)."
                                                                : " is not in any segment of " + (*doc)->name + "."));
  }
  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  key(w, "address");
  put_address(w, *address);
  key(w, "file_offset");
  w.Uint64(*offset);
  w.EndObject();
  return t.str();
}

}  // namespace

std::vector<tool_def> address_tools() {
  using namespace schema;
  const std::string address_only =
      object({{"address", address_argument()}, {"document", document_argument()}}, {"address"}, false);
  std::vector<tool_def> out;
  out.push_back({"xrefs", "Cross References",
                 "The addresses of the instructions that refer to an address: calls and jumps to it, reads and writes "
                 "of it, loads of it as an address. References through registers are not known.",
                 address_only, address_list(), true, xrefs});
  out.push_back({"address_name", "Address Name",
                 "The name at an address (a procedure's, a symbol's, an import slot's label), or null.", address_only,
                 nullable(text()), true, address_name});
  out.push_back({"read_bytes", "Read Bytes",
                 "Up to 4096 bytes from an address, as hex; a read that runs past mapped memory stops there and says "
                 "complete: false. Memory the file does not hold (.bss) reads as zeros.",
                 object({{"address", address_argument()},
                         {"length", ranged(1, 4096, 256, "How many bytes")},
                         {"document", document_argument()}},
                        {"address"}, false),
                 object({{"address", text()},
                         {"bytes_hex", R"({"type":"string","pattern":"^(?:[a-f0-9]{2})*$"})"},
                         {"requested_bytes", integer()},
                         {"returned_bytes", integer()},
                         {"complete", flag()}},
                        {"address", "requested_bytes", "returned_bytes", "bytes_hex", "complete"}),
                 true, read_bytes});
  out.push_back({"address_to_file_offset", "Address To File Offset",
                 "Where an address's byte is in the file; fails for memory the file does not hold.", address_only,
                 object({{"address", text()}, {"file_offset", integer()}}, {"address", "file_offset"}), true,
                 address_to_file_offset});
  return out;
}

}  // namespace toolhost::analysis_server
