// "Did you mean ...?": the known name closest to a mistyped one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace toolhost {

// The entry of `known` closest to `typed` by edit distance, when it is close enough to be a
// likely typo (at most a quarter of the letters, and never more than 2 for short names); else "".
std::string closest(std::string_view typed, const std::vector<std::string_view>& known);
std::string closest(std::string_view typed, const std::vector<std::string>& known);

}  // namespace toolhost
