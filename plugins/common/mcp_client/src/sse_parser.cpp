#include <toolhost/mcp_client/sse_parser.hpp>

namespace toolhost::mcp_client {

void sse_parser::feed(std::string_view bytes, const std::function<void(std::string_view)>& on_data) {
  for (char c : bytes) {
    if (c == '\n') {
      std::string_view l = pending_;
      if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
      line(l, on_data);
      pending_.clear();
    } else {
      pending_ += c;
    }
  }
}

void sse_parser::line(std::string_view text, const std::function<void(std::string_view)>& on_data) {
  if (text.empty()) {  // the blank line ends an event
    if (has_data_ && !data_.empty()) on_data(data_);
    data_.clear();
    has_data_ = false;
    return;
  }
  if (text.front() == ':') return;
  const size_t colon = text.find(':');
  const std::string_view field = text.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : text.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "data") {
    if (has_data_) data_ += '\n';
    data_.append(value);
    has_data_ = true;
  }
}

}  // namespace toolhost::mcp_client
