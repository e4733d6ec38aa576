// Server-sent events, as Streamable HTTP uses them: each event's data is one JSON-RPC message.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace toolhost::mcp_client {

class sse_parser {
 public:
  // Feeds bytes; calls `on_data` with the data of each complete event (multi-line data joined
  // with "\n"). Comments, `event:`, `id:` and `retry:` lines are read and ignored: this client
  // does not resume streams.
  void feed(std::string_view bytes, const std::function<void(std::string_view)>& on_data);

 private:
  void line(std::string_view text, const std::function<void(std::string_view)>& on_data);
  std::string pending_;  // an unfinished line
  std::string data_;     // the current event's data
  bool has_data_ = false;
};

}  // namespace toolhost::mcp_client
