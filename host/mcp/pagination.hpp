// Cursor pagination for tools/list, resources/list, resources/templates/list and prompts/list.
//
// A cursor names the last item of the previous page (and its position, as a fallback), so a
// client paging through a list that changes in the meantime neither skips nor repeats items
// that stayed. Cursors are opaque to clients: URL-safe base64.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::mcp {

struct page {
  size_t begin = 0;
  size_t end = 0;
  std::string next_cursor;  // empty on the last page
};

// `items` are (key, listing JSON) pairs in their stable order.
absl::StatusOr<page> paginate(const std::vector<std::pair<std::string, std::string>>& items, const std::string& cursor,
                              size_t page_size);

// {"<field>":[listings of the page],"nextCursor":...}
std::string page_result(const char* field, const std::vector<std::pair<std::string, std::string>>& items,
                        const page& p);

}  // namespace toolhost::mcp
