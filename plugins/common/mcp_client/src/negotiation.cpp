#include <toolhost/mcp_client/negotiation.hpp>

#include <algorithm>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp_client {

namespace sdk = toolhost::sdk;

namespace {

constexpr const char* kMetaVersion = "io.modelcontextprotocol/protocolVersion";
constexpr const char* kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
constexpr const char* kMetaClientInfo = "io.modelcontextprotocol/clientInfo";
constexpr const char* kMetaServerInfo = "io.modelcontextprotocol/serverInfo";
constexpr const char* kMetaLogLevel = "io.modelcontextprotocol/logLevel";

bool known_legacy(std::string_view v) {
  return v == "2025-11-25" || v == "2025-06-18" || v == "2025-03-26" || v == "2024-11-05";
}

std::string client_info_json(const client_identity& me) {
  return std::string(R"({"name":)") + sdk::quote(me.name) + R"(,"version":)" + sdk::quote(me.version) + "}";
}

std::string capabilities_or_empty(const rapidjson::Value* caps) {
  return caps != nullptr && caps->IsObject() ? sdk::to_json(*caps) : "{}";
}

}  // namespace

std::string discover_params(const client_identity& me) {
  return std::string(R"({"_meta":{")") + kMetaVersion + R"(":)" + sdk::quote(kModernVersion) + R"(,")" +
         kMetaCapabilities + R"(":)" + me.capabilities_json + R"(,")" + kMetaClientInfo + R"(":)" +
         client_info_json(me) + "}}";
}

absl::StatusOr<server_info> read_discover_answer(const absl::StatusOr<std::string>& answer) {
  if (answer.status().code() == absl::StatusCode::kDeadlineExceeded) {
    return absl::UnavailableError("it did not answer server/discover in time (" +
                                  std::string(answer.status().message()) + ")");
  }
  if (!answer.ok()) {
    return absl::UnavailableError("it answered server/discover with an error (" +
                                  std::string(answer.status().message()) + ")");
  }
  auto doc = sdk::parse_json(*answer);
  if (!doc || !doc->IsObject()) return absl::UnavailableError("its server/discover answer is not an object");
  const rapidjson::Value* versions = sdk::member(*doc, "supportedVersions");
  bool listed = false;
  if (versions != nullptr && versions->IsArray()) {
    for (const auto& v : versions->GetArray()) listed = listed || (v.IsString() && sdk::as_view(v) == kModernVersion);
  }
  if (!listed) {
    return absl::UnavailableError("its server/discover answer does not list " + std::string(kModernVersion) +
                                  " among supportedVersions");
  }
  server_info info;
  info.protocol_version = std::string(kModernVersion);
  info.capabilities = capabilities_or_empty(sdk::member(*doc, "capabilities"));
  info.instructions = std::string(sdk::string_member(*doc, "instructions").value_or(""));
  // 2026-07-28 servers name themselves in each result's _meta, discover's included.
  const rapidjson::Value* meta = sdk::member(*doc, "_meta");
  const rapidjson::Value* server = meta != nullptr ? sdk::member(*meta, kMetaServerInfo) : nullptr;
  info.server = server != nullptr && server->IsObject() ? sdk::to_json(*server) : "{}";
  return info;
}

std::string initialize_params(const client_identity& me) {
  return std::string(R"({"protocolVersion":)") + sdk::quote(kLegacyVersion) + R"(,"capabilities":)" +
         me.capabilities_json + R"(,"clientInfo":)" + client_info_json(me) + "}";
}

absl::StatusOr<server_info> read_initialize_answer(std::string_view reply) {
  auto doc = sdk::parse_json(reply);
  if (!doc || !doc->IsObject())
    return absl::InternalError("it answered initialize with something that is not an object");
  server_info info;
  info.protocol_version = std::string(sdk::string_member(*doc, "protocolVersion").value_or(""));
  if (!known_legacy(info.protocol_version)) {
    return absl::FailedPreconditionError("it speaks MCP protocol version '" + info.protocol_version +
                                         "', which this client does not support");
  }
  info.capabilities = capabilities_or_empty(sdk::member(*doc, "capabilities"));
  const rapidjson::Value* server = sdk::member(*doc, "serverInfo");
  info.server = server != nullptr ? sdk::to_json(*server) : "{}";
  info.instructions = std::string(sdk::string_member(*doc, "instructions").value_or(""));
  return info;
}

void add_request_meta(rapidjson::Value& params, rapidjson::Document::AllocatorType& alloc, const client_identity& me) {
  if (!params.HasMember("_meta") || !params["_meta"].IsObject()) {
    params.RemoveMember("_meta");
    params.AddMember("_meta", rapidjson::Value(rapidjson::kObjectType), alloc);
  }
  rapidjson::Value& meta = params["_meta"];
  auto put = [&](const char* key, std::string_view json) {
    rapidjson::Document value(&alloc);
    value.Parse(json.data(), json.size());
    if (value.HasParseError()) value.SetObject();
    meta.RemoveMember(key);
    meta.AddMember(rapidjson::StringRef(key), rapidjson::Value(value, alloc), alloc);
  };
  put(kMetaVersion, sdk::quote(kModernVersion));
  put(kMetaCapabilities, me.capabilities_json);
  put(kMetaClientInfo, client_info_json(me));
  if (!me.log_level.empty()) put(kMetaLogLevel, sdk::quote(me.log_level));
}

void remove_request_meta(rapidjson::Value& meta) {
  if (!meta.IsObject()) return;
  for (const char* key : {kMetaVersion, kMetaCapabilities, kMetaClientInfo, kMetaLogLevel}) meta.RemoveMember(key);
}

std::string legacy_result(std::string result_json) {
  if (result_json.find("\"resultType\"") == std::string::npos && result_json.find(kMetaServerInfo) == std::string::npos)
    return result_json;
  rapidjson::Document doc;
  doc.Parse(result_json.c_str(), result_json.size());
  if (doc.HasParseError() || !doc.IsObject()) return result_json;
  if (auto type = sdk::string_member(doc, "resultType"); type && *type == "complete") doc.RemoveMember("resultType");
  if (auto meta = doc.FindMember("_meta"); meta != doc.MemberEnd() && meta->value.IsObject()) {
    meta->value.RemoveMember(kMetaServerInfo);
    if (meta->value.ObjectEmpty()) doc.RemoveMember(meta);
  }
  return sdk::to_json(doc);
}

absl::StatusOr<server_info> negotiate(connection& conn, const client_identity& me,
                                      std::chrono::milliseconds probe_timeout,
                                      std::chrono::milliseconds start_timeout) {
  // The probe may use half of the start's time at most, so that an upstream that never answers
  // it still gets its initialize within start_timeout.
  const auto began = std::chrono::steady_clock::now();
  const auto probe = std::min(probe_timeout, start_timeout / 2);
  auto modern = read_discover_answer(conn.request("server/discover", discover_params(me), probe));
  if (modern.ok()) {
    modern->chosen_because = "it answered server/discover";
    conn.negotiated(modern->protocol_version);
    return modern;
  }
  if (conn.closed()) return absl::UnavailableError(conn.closed_reason());
  const auto left = std::max(
      std::chrono::milliseconds(1),
      start_timeout - std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - began));
  auto reply = conn.request("initialize", initialize_params(me), left);
  if (!reply.ok()) return reply.status();
  auto info = read_initialize_answer(*reply);
  if (!info.ok()) return info.status();
  info->chosen_because = std::string(modern.status().message());
  conn.negotiated(info->protocol_version);
  if (absl::Status s = conn.notify("notifications/initialized", ""); !s.ok()) return s;
  return info;
}

}  // namespace toolhost::mcp_client
