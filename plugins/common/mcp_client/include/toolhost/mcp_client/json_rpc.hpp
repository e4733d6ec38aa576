// JSON-RPC 2.0 framing for an MCP client: newline-delimited messages (the stdio transport's
// framing), classifying what arrives, and building what goes out.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <absl/status/status.h>
#include <absl/status/statusor.h>

namespace toolhost::mcp_client {

// Splits a byte stream into lines. A line longer than `max_line` bytes is an error, because
// an upstream that never sends a newline must not grow our memory without bound.
class line_splitter {
 public:
  explicit line_splitter(size_t max_line = size_t{64} << 20) : max_line_(max_line) {}

  // Appends `data` and calls `on_line` for each complete line, without its "\n" (and without
  // a "\r" before it). Empty lines are skipped.
  absl::Status feed(std::string_view data, const std::function<void(std::string_view)>& on_line);

  size_t buffered() const { return buffer_.size(); }

 private:
  size_t max_line_;
  std::string buffer_;
};

// One incoming JSON-RPC message, classified. Members hold compact JSON text.
struct message {
  enum class kind { request, notification, response, error_response };
  kind type = kind::notification;
  std::string method;      // requests and notifications
  std::string id;          // JSON text of the id ("7" or "\"abc\""); empty for notifications
  std::string params;      // requests and notifications: the params value, "{}" when absent
  std::string result;      // responses: the result value
  int64_t error_code = 0;  // error responses
  std::string error_message;
  std::string error;  // error responses: the whole error object
};

// Parses one line. A batch (array), a non-object or a message that is none of the four
// kinds is an error naming the problem.
absl::StatusOr<message> parse_message(std::string_view text);

// The id as an integer when it is one (our own requests always use integers).
bool integer_id(const message& m, int64_t* out);

// Outgoing messages, compact and without newlines. `params_json` / `result_json` must be JSON
// text; an empty `params_json` leaves params out.
std::string make_request(int64_t id, std::string_view method, std::string_view params_json);
std::string make_notification(std::string_view method, std::string_view params_json);
std::string make_result(std::string_view id_json, std::string_view result_json);
std::string make_error(std::string_view id_json, int64_t code, std::string_view message_text);

}  // namespace toolhost::mcp_client
