#include "project_store.hpp"

#include <algorithm>
#include <ctime>
#include <fstream>
#include <iterator>

#include <rapidjson/document.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/stringbuffer.h>
#include <toolhost/eleven/values.hpp>

#include "atomic_file.hpp"

namespace toolhost::eleven {
namespace {

constexpr std::string_view kFormat = "toolhost-window project 1";
using writer_t = rapidjson::PrettyWriter<rapidjson::StringBuffer>;

void put(writer_t& w, std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }
void put(writer_t& w, const std::string& s) { put(w, std::string_view(s)); }
void put(writer_t& w, const char* s) { put(w, std::string_view(s)); }
void put_optional(writer_t& w, const std::optional<std::string>& s) {
  if (s)
    put(w, *s);
  else
    w.Null();
}

std::string text_of(const rapidjson::Value& obj, const char* name) {
  auto it = obj.FindMember(name);
  return it != obj.MemberEnd() && it->value.IsString() ? std::string(it->value.GetString(), it->value.GetStringLength())
                                                       : std::string();
}
std::optional<std::string> optional_text_of(const rapidjson::Value& obj, const char* name) {
  auto it = obj.FindMember(name);
  if (it == obj.MemberEnd() || !it->value.IsString()) return std::nullopt;
  return std::string(it->value.GetString(), it->value.GetStringLength());
}
uint64_t number_of(const rapidjson::Value& obj, const char* name) {
  auto it = obj.FindMember(name);
  return it != obj.MemberEnd() && it->value.IsUint64() ? it->value.GetUint64() : 0;
}

absl::Status bad(const std::filesystem::path& path, const std::string& what) {
  return absl::DataLossError("The project file " + path.string() + " is damaged: " + what + ".");
}

absl::StatusOr<uint64_t> address_of(const std::filesystem::path& path, std::string_view text) {
  auto a = parse_address(text);
  if (!a.ok()) return bad(path, "\"" + std::string(text) + "\" is not an address");
  return *a;
}

}  // namespace

std::string_view to_string(mark_kind kind) {
  switch (kind) {
    case mark_kind::name: return "names";
    case mark_kind::note: return "notes";
    case mark_kind::comment: return "comments";
    case mark_kind::bookmark: return "bookmarks";
    case mark_kind::code_type: return "code_types";
    case mark_kind::number_format: return "number_formats";
  }
  return "names";
}

std::optional<mark_kind> mark_kind_from(std::string_view text) {
  for (mark_kind k : kMarkKinds) {
    if (to_string(k) == text) return k;
  }
  return std::nullopt;
}

std::string_view to_string(suggestion_status status) {
  switch (status) {
    case suggestion_status::waiting: return "waiting";
    case suggestion_status::accepted: return "accepted";
    case suggestion_status::rejected: return "rejected";
  }
  return "waiting";
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

absl::StatusOr<project_store> project_store::load(const std::filesystem::path& path,
                                                  const std::filesystem::path& binary) {
  project_store p;
  p.path_ = path;
  p.binary_ = binary.string();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec))
      return absl::PermissionDeniedError("Cannot read the project file " + path.string() + ".");
    return p;  // a new project
  }
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(text, path, binary);
}

absl::StatusOr<project_store> project_store::parse(std::string_view text, const std::filesystem::path& path,
                                                   const std::filesystem::path& binary) {
  project_store p;
  p.path_ = path;
  p.binary_ = binary.string();
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) return bad(path, "it is not a JSON object");
  const rapidjson::Value& root = doc;  // const iterators keep C++20's rewritten != unambiguous
  if (text_of(root, "format") != kFormat)
    return bad(path, "it is not a toolhost-window project (no \"format\": \"" + std::string(kFormat) + "\")");
  const std::string recorded = text_of(root, "binary");
  if (!recorded.empty() && recorded != p.binary_) {
    return absl::FailedPreconditionError("The project file " + path.string() + " belongs to " + recorded + ", not " +
                                         p.binary_ + "; give another --project.");
  }
  if (auto m = root.FindMember("marks"); m != root.MemberEnd() && m->value.IsObject()) {
    for (const auto& group : m->value.GetObject()) {
      auto kind = mark_kind_from(group.name.GetString());
      if (!kind || !group.value.IsObject())
        return bad(path, std::string("unknown mark group ") + group.name.GetString());
      for (const auto& entry : group.value.GetObject()) {
        auto a = address_of(path, entry.name.GetString());
        if (!a.ok()) return a.status();
        if (!entry.value.IsString()) return bad(path, "a mark that is not a string");
        p.marks_[*kind][*a] = entry.value.GetString();
      }
    }
  }
  const auto read_change = [&](const rapidjson::Value& obj) -> absl::StatusOr<change> {
    change c;
    auto kind = mark_kind_from(text_of(obj, "kind"));
    if (!kind) return bad(path, "a change of unknown kind");
    auto a = address_of(path, text_of(obj, "address"));
    if (!a.ok()) return a.status();
    c.kind = *kind;
    c.address = *a;
    c.value = optional_text_of(obj, "value");
    return c;
  };
  if (auto h = root.FindMember("history"); h != root.MemberEnd() && h->value.IsArray()) {
    for (const auto& e : h->value.GetArray()) {
      if (!e.IsObject()) return bad(path, "a history entry that is not an object");
      history_entry entry;
      entry.seq = number_of(e, "seq");
      entry.time = text_of(e, "time");
      entry.by = {text_of(e, "agent"), text_of(e, "chat")};
      auto c = read_change(e);
      if (!c.ok()) return c.status();
      entry.what = *c;
      entry.before = optional_text_of(e, "before");
      entry.text = text_of(e, "text");
      auto u = e.FindMember("undone");
      entry.undone = u != e.MemberEnd() && u->value.IsBool() && u->value.GetBool();
      p.next_seq_ = std::max(p.next_seq_, entry.seq + 1);
      p.history_.push_back(std::move(entry));
    }
  }
  if (auto s = root.FindMember("suggestions"); s != root.MemberEnd() && s->value.IsArray()) {
    for (const auto& e : s->value.GetArray()) {
      if (!e.IsObject()) return bad(path, "a suggestion that is not an object");
      suggestion sg;
      sg.id = number_of(e, "id");
      sg.time = text_of(e, "time");
      sg.by = {text_of(e, "agent"), text_of(e, "chat")};
      const std::string status = text_of(e, "status");
      sg.status = status == "accepted"   ? suggestion_status::accepted
                  : status == "rejected" ? suggestion_status::rejected
                                         : suggestion_status::waiting;
      sg.summary = text_of(e, "summary");
      if (text_of(e, "kind") == "patch") {
        patch pt;
        auto a = address_of(path, text_of(e, "address"));
        if (!a.ok()) return a.status();
        pt.address = *a;
        auto bytes = parse_hex_bytes(text_of(e, "bytes"));
        if (!bytes.ok()) return bad(path, "a patch with malformed bytes");
        pt.bytes = *bytes;
        pt.reason = text_of(e, "reason");
        sg.bytes = std::move(pt);
      } else {
        auto c = read_change(e);
        if (!c.ok()) return c.status();
        sg.edit = *c;
      }
      p.next_suggestion_ = std::max(p.next_suggestion_, sg.id + 1);
      p.suggestions_.push_back(std::move(sg));
    }
  }
  if (auto o = root.FindMember("accepted_order"); o != root.MemberEnd() && o->value.IsArray()) {
    for (const auto& id : o->value.GetArray()) {
      if (id.IsUint64()) p.accepted_order_.push_back(id.GetUint64());
    }
  }
  return p;
}

std::string project_store::to_json() const {
  rapidjson::StringBuffer buffer;
  writer_t w(buffer);
  w.StartObject();
  w.Key("format");
  put(w, kFormat);
  w.Key("binary");
  put(w, binary_);
  w.Key("marks");
  w.StartObject();
  for (mark_kind k : kMarkKinds) {
    w.Key(std::string(to_string(k)).c_str());
    w.StartObject();
    if (auto it = marks_.find(k); it != marks_.end()) {
      for (const auto& [address, value] : it->second) {
        w.Key(format_address(address).c_str());
        put(w, value);
      }
    }
    w.EndObject();
  }
  w.EndObject();
  const auto put_change = [&](const change& c) {
    w.Key("kind");
    put(w, std::string(to_string(c.kind)));
    w.Key("address");
    put(w, format_address(c.address));
    w.Key("value");
    put_optional(w, c.value);
  };
  w.Key("history");
  w.StartArray();
  for (const history_entry& e : history_) {
    w.StartObject();
    w.Key("seq");
    w.Uint64(e.seq);
    w.Key("time");
    put(w, e.time);
    w.Key("agent");
    put(w, e.by.agent);
    w.Key("chat");
    put(w, e.by.chat);
    put_change(e.what);
    w.Key("before");
    put_optional(w, e.before);
    w.Key("text");
    put(w, e.text);
    w.Key("undone");
    w.Bool(e.undone);
    w.EndObject();
  }
  w.EndArray();
  w.Key("suggestions");
  w.StartArray();
  for (const suggestion& s : suggestions_) {
    w.StartObject();
    w.Key("id");
    w.Uint64(s.id);
    w.Key("time");
    put(w, s.time);
    w.Key("agent");
    put(w, s.by.agent);
    w.Key("chat");
    put(w, s.by.chat);
    w.Key("status");
    put(w, to_string(s.status));
    w.Key("summary");
    put(w, s.summary);
    if (s.bytes) {
      w.Key("kind");
      put(w, "patch");
      w.Key("address");
      put(w, format_address(s.bytes->address));
      w.Key("bytes");
      put(w, format_bytes(s.bytes->bytes));
      w.Key("reason");
      put(w, s.bytes->reason);
    } else if (s.edit) {
      put_change(*s.edit);
    }
    w.EndObject();
  }
  w.EndArray();
  w.Key("accepted_order");
  w.StartArray();
  for (uint64_t id : accepted_order_) w.Uint64(id);
  w.EndArray();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

absl::Status project_store::save() const {
  absl::Status s = write_file_atomically(path_, to_json(), 0644);
  if (!s.ok()) return absl::UnavailableError("Could not save the project file: " + std::string(s.message()) + ".");
  return s;
}

const std::map<uint64_t, std::string>& project_store::marks(mark_kind kind) const {
  static const std::map<uint64_t, std::string> empty;
  auto it = marks_.find(kind);
  return it == marks_.end() ? empty : it->second;
}

std::optional<std::string> project_store::mark(mark_kind kind, uint64_t address) const {
  const auto& m = marks(kind);
  auto it = m.find(address);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

const history_entry& project_store::apply(const change& c, const author& by, std::string text) {
  history_entry e;
  e.seq = next_seq_++;
  e.time = utc_now();
  e.by = by;
  e.what = c;
  e.before = mark(c.kind, c.address);
  e.text = std::move(text);
  auto& group = marks_[c.kind];
  if (c.value)
    group[c.address] = *c.value;
  else
    group.erase(c.address);
  history_.push_back(std::move(e));
  return history_.back();
}

absl::StatusOr<history_entry> project_store::undo() {
  for (auto it = history_.rbegin(); it != history_.rend(); ++it) {
    if (it->undone) continue;
    auto& group = marks_[it->what.kind];
    if (it->before)
      group[it->what.address] = *it->before;
    else
      group.erase(it->what.address);
    it->undone = true;
    return *it;
  }
  return absl::NotFoundError("Nothing to undo.");
}

const suggestion& project_store::suggest(suggestion s) {
  s.id = next_suggestion_++;
  s.time = utc_now();
  s.status = suggestion_status::waiting;
  suggestions_.push_back(std::move(s));
  return suggestions_.back();
}

absl::StatusOr<suggestion> project_store::settle(uint64_t id, bool accept) {
  for (suggestion& s : suggestions_) {
    if (s.id != id) continue;
    if (s.status != suggestion_status::waiting) {
      return absl::FailedPreconditionError("Suggestion #" + std::to_string(id) + " was already " +
                                           std::string(to_string(s.status)) + ".");
    }
    s.status = accept ? suggestion_status::accepted : suggestion_status::rejected;
    if (accept) accepted_order_.push_back(id);
    return s;
  }
  return absl::NotFoundError("There is no suggestion #" + std::to_string(id) + ".");
}

std::vector<patch> project_store::accepted_patches() const {
  std::vector<patch> out;
  for (uint64_t id : accepted_order_) {
    for (const suggestion& s : suggestions_) {
      if (s.id == id && s.bytes && s.status == suggestion_status::accepted) out.push_back(*s.bytes);
    }
  }
  return out;
}

}  // namespace toolhost::eleven
