// Matching a URI against an RFC 6570 level-1 template ("test://template/{id}/data"), which is
// what resource templates use: each {variable} matches one or more characters other than '/'.
#pragma once

#include <string_view>

namespace toolhost::mcp {

bool uri_template_matches(std::string_view uri_template, std::string_view uri);

}  // namespace toolhost::mcp
