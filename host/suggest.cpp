#include "host/suggest.hpp"

#include <algorithm>

namespace toolhost {
namespace {

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest(std::string_view typed, const std::vector<std::string_view>& known) {
  std::string best;
  size_t limit = std::max<size_t>(2, typed.size() / 4);
  for (std::string_view k : known) {
    const size_t d = edit_distance(typed, k);
    if (d <= limit && d > 0) {
      limit = d - 1;  // only a closer one replaces it
      best = std::string(k);
    }
  }
  return best;
}

std::string closest(std::string_view typed, const std::vector<std::string>& known) {
  return closest(typed, std::vector<std::string_view>(known.begin(), known.end()));
}

}  // namespace toolhost
