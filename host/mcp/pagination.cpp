#include "host/mcp/pagination.hpp"

#include <absl/status/status.h>
#include <absl/strings/escaping.h>
#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <toolhost/sdk/strings.hpp>

#include <toolhost/sdk/json.hpp>

namespace toolhost::mcp {

absl::StatusOr<page> paginate(const std::vector<std::pair<std::string, std::string>>& items, const std::string& cursor,
                              size_t page_size) {
  page p;
  if (!cursor.empty()) {
    std::string decoded;
    size_t colon = std::string::npos;
    size_t index = 0;
    if (absl::WebSafeBase64Unescape(cursor, &decoded)) colon = decoded.find(':');
    if (colon == std::string::npos || !absl::SimpleAtoi(decoded.substr(0, colon), &index)) {
      return absl::InvalidArgumentError("Invalid params: the cursor is not one this server issued");
    }
    const std::string key = decoded.substr(colon + 1);
    p.begin = std::min(index, items.size());
    // Prefer the position of the named item: the list may have changed since.
    for (size_t i = 0; i < items.size(); ++i) {
      if (items[i].first == key) {
        p.begin = i + 1;
        break;
      }
    }
  }
  p.end = std::min(items.size(), p.begin + page_size);
  if (p.end < items.size() && p.end > 0) {
    p.next_cursor = absl::WebSafeBase64Escape(cat(p.end, ":", items[p.end - 1].first));
  }
  return p;
}

std::string page_result(const char* field, const std::vector<std::pair<std::string, std::string>>& items,
                        const page& p) {
  std::string out = cat(R"({")", field, R"(":[)");
  for (size_t i = p.begin; i < p.end; ++i) append(out, i == p.begin ? "" : ",", items[i].second);
  out += ']';
  if (!p.next_cursor.empty()) append(out, R"(,"nextCursor":)", sdk::quote(p.next_cursor));
  out += '}';
  return out;
}

}  // namespace toolhost::mcp
