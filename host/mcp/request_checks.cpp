#include "host/mcp/request_checks.hpp"

#include <cstring>

#include <absl/status/status.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>

#include "host/mcp/session_params.hpp"

namespace toolhost::mcp {
namespace {

bool has_nul(const rapidjson::Value& s) { return std::memchr(s.GetString(), '\0', s.GetStringLength()) != nullptr; }

std::optional<std::string> find_nul(const rapidjson::Value& v, const std::string& path) {
  if (v.IsString()) return has_nul(v) ? std::optional<std::string>(path) : std::nullopt;
  if (v.IsArray()) {
    for (rapidjson::SizeType i = 0; i < v.Size(); ++i) {
      if (auto hit = find_nul(v[i], cat(path, "[", i, "]"))) return hit;
    }
  } else if (v.IsObject()) {
    for (const auto& m : v.GetObject()) {
      // A NUL in a key is shown escaped, as the client wrote it.
      std::string name;
      for (char c : std::string_view(m.name.GetString(), m.name.GetStringLength())) {
        name += c == '\0' ? std::string("\\u0000") : std::string(1, c);
      }
      const std::string here = path.empty() ? name : cat(path, ".", name);
      if (has_nul(m.name)) return here;
      if (auto hit = find_nul(m.value, here)) return hit;
    }
  }
  return std::nullopt;
}

bool integer_literal(std::string_view s) {
  size_t i = s.size() > 0 && s[0] == '-' ? 1 : 0;
  if (i == s.size()) return false;
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> nul_byte_in(const rapidjson::Value& arguments) { return find_nul(arguments, ""); }

absl::StatusOr<std::string> progress_token_text(const rapidjson::Value& token, std::string_view message_text,
                                                int index) {
  const absl::Status refused = absl::InvalidArgumentError(
      "Invalid params: _meta.progressToken must be a string or an integer (MCP's ProgressToken)");
  if (token.IsString() || token.IsInt64() || token.IsUint64()) return sdk::to_json(token);
  if (!token.IsDouble()) return refused;
  // A double here is either a float, refused, or an integer past 64 bits: the message again,
  // with every number kept as its text.
  rapidjson::Document raw;
  raw.Parse<rapidjson::kParseNumbersAsStringsFlag>(message_text.data(), message_text.size());
  const rapidjson::Value* message = raw.HasParseError() ? nullptr : &raw;
  if (message != nullptr && index >= 0) {
    message =
        message->IsArray() && static_cast<rapidjson::SizeType>(index) < message->Size() ? &(*message)[index] : nullptr;
  }
  for (const char* key : {"params", "_meta", "progressToken"}) {
    message = message != nullptr ? sdk::member(*message, key) : nullptr;
  }
  if (message == nullptr || !message->IsString() || !integer_literal(sdk::as_view(*message))) return refused;
  return std::string(sdk::as_view(*message));
}

std::string meta_for_plugins(const rapidjson::Value& meta) {
  if (!meta.IsObject()) return "{}";
  const auto context = [](const rapidjson::Value& key) {
    const std::string_view k = sdk::as_view(key);
    return k == kMetaVersion || k == kMetaCapabilities || k == kMetaLogLevel;
  };
  size_t kept = 0;
  for (const auto& m : meta.GetObject()) kept += context(m.name) ? 0 : 1;
  if (kept == meta.MemberCount()) return sdk::to_json(meta);
  if (kept == 0) return "{}";
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.StartObject();
  for (const auto& m : meta.GetObject()) {
    if (context(m.name)) continue;
    m.name.Accept(writer);
    m.value.Accept(writer);
  }
  writer.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace toolhost::mcp
