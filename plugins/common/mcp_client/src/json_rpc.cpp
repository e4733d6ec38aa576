#include <toolhost/mcp_client/json_rpc.hpp>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp_client {

namespace sdk = toolhost::sdk;

absl::Status line_splitter::feed(std::string_view data, const std::function<void(std::string_view)>& on_line) {
  size_t start = 0;
  while (start < data.size()) {
    const size_t nl = data.find('\n', start);
    if (nl == std::string_view::npos) {
      buffer_.append(data.substr(start));
      break;
    }
    std::string_view piece = data.substr(start, nl - start);
    start = nl + 1;
    std::string_view line = piece;
    if (!buffer_.empty()) {
      buffer_.append(piece);
      line = buffer_;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.size() > max_line_) {
      buffer_.clear();
      return absl::ResourceExhaustedError("a message from the upstream is longer than " + std::to_string(max_line_) +
                                          " bytes");
    }
    if (!line.empty()) on_line(line);
    buffer_.clear();
  }
  if (buffer_.size() > max_line_) {
    buffer_.clear();
    return absl::ResourceExhaustedError("a message from the upstream is longer than " + std::to_string(max_line_) +
                                        " bytes");
  }
  return absl::OkStatus();
}

absl::StatusOr<message> parse_message(std::string_view text) {
  std::string problem;
  auto doc = sdk::parse_json(text, &problem);
  if (!doc) return absl::InvalidArgumentError("the upstream sent " + problem);
  if (doc->IsArray())
    return absl::InvalidArgumentError("the upstream sent a JSON-RPC batch, which MCP no longer allows");
  if (!doc->IsObject()) return absl::InvalidArgumentError("the upstream sent a JSON value that is not an object");

  message m;
  const rapidjson::Value* id = sdk::member(*doc, "id");
  const rapidjson::Value* method = sdk::member(*doc, "method");
  if (id != nullptr && !id->IsString() && !id->IsInt64() && !id->IsUint64()) {
    return absl::InvalidArgumentError("the upstream sent a message whose id is neither a string nor an integer");
  }
  if (id != nullptr) m.id = sdk::to_json(*id);

  if (method != nullptr) {
    if (!method->IsString())
      return absl::InvalidArgumentError("the upstream sent a message whose method is not a string");
    m.method = std::string(sdk::as_view(*method));
    const rapidjson::Value* params = sdk::member(*doc, "params");
    m.params = params != nullptr ? sdk::to_json(*params) : "{}";
    m.type = id != nullptr ? message::kind::request : message::kind::notification;
    return m;
  }
  if (id == nullptr) return absl::InvalidArgumentError("the upstream sent a message with neither a method nor an id");
  if (const rapidjson::Value* result = sdk::member(*doc, "result")) {
    m.type = message::kind::response;
    m.result = sdk::to_json(*result);
    return m;
  }
  if (const rapidjson::Value* error = sdk::member(*doc, "error")) {
    m.type = message::kind::error_response;
    m.error = sdk::to_json(*error);
    if (const rapidjson::Value* code = sdk::member(*error, "code"); code != nullptr && code->IsInt64()) {
      m.error_code = code->GetInt64();
    }
    m.error_message = std::string(sdk::string_member(*error, "message").value_or("(no message)"));
    return m;
  }
  return absl::InvalidArgumentError("the upstream sent a response with neither a result nor an error");
}

bool integer_id(const message& m, int64_t* out) {
  if (m.id.empty() || m.id.front() == '"') return false;
  try {
    size_t used = 0;
    const long long v = std::stoll(m.id, &used);
    if (used != m.id.size()) return false;
    *out = v;
    return true;
  } catch (...) {
    return false;
  }
}

std::string make_request(int64_t id, std::string_view method, std::string_view params_json) {
  std::string out = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":)" + sdk::quote(method);
  if (!params_json.empty()) {
    out += R"(,"params":)";
    out += params_json;
  }
  out += '}';
  return out;
}

std::string make_notification(std::string_view method, std::string_view params_json) {
  std::string out = R"({"jsonrpc":"2.0","method":)" + sdk::quote(method);
  if (!params_json.empty()) {
    out += R"(,"params":)";
    out += params_json;
  }
  out += '}';
  return out;
}

std::string make_result(std::string_view id_json, std::string_view result_json) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id_json;
  out += R"(,"result":)";
  out += result_json;
  out += '}';
  return out;
}

std::string make_error(std::string_view id_json, int64_t code, std::string_view message_text) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id_json;
  out += R"(,"error":{"code":)" + std::to_string(code) + R"(,"message":)" + sdk::quote(message_text) + "}}";
  return out;
}

}  // namespace toolhost::mcp_client
