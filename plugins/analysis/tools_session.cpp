// open_binary and list_documents: which binaries this server has open.
#include <absl/status/status.h>

#include "schemas.hpp"
#include "tools.hpp"

namespace toolhost::analysis_server {
namespace {

// REA's architecture names; only x86 and x86_64 are disassembled, the others are named so the
// agent knows what the file is.
std::optional<std::string> architecture_of(const an::image& img) {
  switch (img.arch()) {
    case an::architecture::x86: return "x86";
    case an::architecture::x86_64: return "x86_64";
    default: break;
  }
  if (img.machine() == "AArch64") return "arm64";
  if (img.machine() == "ARM") return "arm";
  return std::nullopt;
}

absl::StatusOr<std::string> open_binary(tool_context& c) {
  const std::string provider = c.args.string("provider_id", "auto");
  if (provider != "auto" && provider != kProviderId) {
    return absl::InvalidArgumentError("This server's only analysis provider is " + std::string(kProviderId) +
                                      "; leave provider_id out or say \"auto\".");
  }
  auto doc = c.state.documents.open(c.args.string("path"));
  if (!doc.ok()) return doc.status();
  c.used = *doc;
  // The answer means the analysis is ready: wait for it here, with progress, rather than in
  // whichever call comes next.
  auto done = c.analysis();
  if (!done.ok()) return done.status();

  json_text t;
  json_writer& w = t.w();
  const an::image& img = (*doc)->img;
  w.StartObject();
  key(w, "path");
  put_text(w, (*doc)->path);
  key(w, "sha256");
  put(w, (*doc)->sha256);
  key(w, "format");
  put(w, an::to_string(img.format()));
  key(w, "kind");
  put(w, "executable");
  key(w, "architecture");
  if (auto arch = architecture_of(img))
    put(w, *arch);
  else
    w.Null();
  key(w, "loaderArgs");
  w.StartArray();
  w.EndArray();
  w.EndObject();
  return t.str();
}

absl::StatusOr<std::string> list_documents(tool_context& c) {
  json_text t;
  t.w().StartArray();
  for (const std::string& name : c.state.documents.names()) put_text(t.w(), name);
  t.w().EndArray();
  return t.str();
}

}  // namespace

std::vector<tool_def> session_tools() {
  using namespace schema;
  std::vector<tool_def> out;
  out.push_back({"open_binary", "Open Binary",
                 "Open an ELF or PE executable or library and analyse all of it: functions, cross references, "
                 "strings, names. The answer comes when the analysis is ready (progress is reported while it runs); "
                 "the analysis is kept by the file's SHA-256, so opening the same bytes again is instant. Other tools "
                 "read the binary opened last unless their `document` says otherwise.",
                 object({{"path", text("Path of the binary to open")},
                         {"provider_id", text("\"auto\" or \"toolhost-analysis\", the one provider here")}},
                        {"path"}),
                 object({{"path", text()},
                         {"sha256", R"({"type":"string","pattern":"^[a-f0-9]{64}$"})"},
                         {"format", enumeration({"elf", "pe"})},
                         {"kind", enumeration({"executable"})},
                         {"architecture", nullable(enumeration({"x86", "x86_64", "arm", "arm64"}))},
                         {"loaderArgs", array(text())}},
                        {"path", "sha256", "format", "kind", "architecture", "loaderArgs"}),
                 false, open_binary});
  out.push_back(
      {"list_documents", "List Documents",
       "The names of the binaries open here, opened longest ago first; pass one as `document` to other tools.",
       object({}, {}, false), array(text()), true, list_documents});
  return out;
}

}  // namespace toolhost::analysis_server
