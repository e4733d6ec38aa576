#include "evidence_store.hpp"

#include "json_out.hpp"
#include "sha256.hpp"

namespace toolhost::analysis_server {
namespace {

// The record's fields in a fixed order; `local_path` and the id are left out of what the id hashes.
std::string record_text(const std::optional<evidence_subject>& subject, std::string_view operation,
                        std::string_view parameters_json, std::string_view result_json,
                        const std::vector<std::string>& limitations, std::string_view id, bool with_path) {
  json_text t;
  json_writer& w = t.w();
  w.StartObject();
  key(w, "schema_version");
  w.Int(2);
  if (!id.empty()) {
    key(w, "evidence_id");
    put(w, id);
  }
  key(w, "subject");
  if (subject) {
    w.StartObject();
    key(w, "name");
    put_text(w, subject->name);
    key(w, "digest");
    w.StartObject();
    key(w, "sha256");
    put(w, subject->sha256);
    w.EndObject();
    key(w, "format");
    put(w, subject->format);
    key(w, "architecture");
    if (subject->architecture)
      put(w, *subject->architecture);
    else
      w.Null();
    if (with_path) {
      key(w, "local_path");
      put_text(w, subject->local_path);
    }
    w.EndObject();
  } else {
    w.Null();
  }
  key(w, "provider");
  w.StartObject();
  key(w, "id");
  put(w, kProviderId);
  key(w, "name");
  put(w, kProviderName);
  key(w, "version");
  put(w, kProviderVersion);
  w.EndObject();
  key(w, "predicate_type");
  put(w, "rea.analysis/v2");
  key(w, "operation");
  put(w, operation);
  key(w, "parameters");
  w.RawValue(parameters_json.data(), parameters_json.size(), rapidjson::kObjectType);
  key(w, "raw_result");
  w.Null();
  key(w, "normalized_result");
  w.RawValue(result_json.data(), result_json.size(), rapidjson::kObjectType);
  key(w, "confidence");
  put(w, "observed");
  key(w, "authority");
  put(w, "shipped-artifact");
  key(w, "environment");
  w.Null();
  key(w, "limitations");
  w.StartArray();
  for (const auto& l : limitations) put(w, l);
  w.EndArray();
  key(w, "locations");
  w.StartArray();
  w.EndArray();
  key(w, "evidence_links");
  w.StartArray();
  w.EndArray();
  w.EndObject();
  return t.str();
}

}  // namespace

std::string evidence_store::record(const std::optional<evidence_subject>& subject, std::string_view operation,
                                   std::string_view parameters_json, std::string_view result_json,
                                   const std::vector<std::string>& limitations) {
  const std::string id =
      "ev_" + sha256_hex(record_text(subject, operation, parameters_json, result_json, limitations, {}, false));
  std::string text = record_text(subject, operation, parameters_json, result_json, limitations, id, true);
  std::lock_guard lock(mutex_);
  if (auto it = records_.find(id); it != records_.end()) {
    order_.splice(order_.end(), order_, it->second.second);  // seen again: newest now
    return id;
  }
  if (text.size() > max_bytes_) return id;  // too big to keep; the answer itself still holds it all
  bytes_ += text.size();
  order_.push_back(id);
  records_.emplace(id, std::make_pair(std::move(text), std::prev(order_.end())));
  while (bytes_ > max_bytes_ && !order_.empty()) {
    auto it = records_.find(order_.front());
    bytes_ -= it->second.first.size();
    records_.erase(it);
    order_.pop_front();
  }
  return id;
}

std::optional<std::string> evidence_store::read(std::string_view id) const {
  std::lock_guard lock(mutex_);
  auto it = records_.find(id);
  if (it == records_.end()) return std::nullopt;
  return it->second.first;
}

}  // namespace toolhost::analysis_server
