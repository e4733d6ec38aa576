// JSON-RPC 2.0 messages as compact text: the error codes MCP uses and builders for results,
// errors, notifications and batch replies.
#pragma once

#include <string>
#include <string_view>
#include <toolhost/sdk/strings.hpp>
#include <vector>

#include <absl/strings/str_cat.h>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp::jsonrpc {

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kResourceNotFound = -32002;         // MCP 2025-11-25
inline constexpr int kHeaderMismatch = -32020;           // MCP 2026-07-28 (HTTP headers differ from the body)
inline constexpr int kMissingClientCapability = -32021;  // MCP 2026-07-28
inline constexpr int kUnsupportedVersion = -32022;       // MCP 2026-07-28

// `id_json` and `result_json` are JSON texts.
inline std::string result_message(std::string_view id_json, std::string_view result_json) {
  return cat(R"({"jsonrpc":"2.0","id":)", id_json, R"(,"result":)", result_json, "}");
}

inline std::string error_message(std::string_view id_json, int code, std::string_view message,
                                 std::string_view data_json = {}) {
  std::string out =
      cat(R"({"jsonrpc":"2.0","id":)", id_json, R"(,"error":{"code":)", code, R"(,"message":)", sdk::quote(message));
  if (!data_json.empty()) append(out, R"(,"data":)", data_json);
  out += "}}";
  return out;
}

inline std::string notification_message(std::string_view method, std::string_view params_json) {
  return cat(R"({"jsonrpc":"2.0","method":)", sdk::quote(method), R"(,"params":)", params_json, "}");
}

inline std::string join_batch(const std::vector<std::string>& messages) {
  std::string out = "[";
  for (size_t i = 0; i < messages.size(); ++i) append(out, i == 0 ? "" : ",", messages[i]);
  out += ']';
  return out;
}

}  // namespace toolhost::mcp::jsonrpc
