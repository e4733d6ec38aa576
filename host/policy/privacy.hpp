// Privacy filters a server opts into: replacing the home folder with "~" in every answer.
#pragma once

#include <string>
#include <string_view>

#include <rapidjson/document.h>

namespace toolhost::policy {

// Replaces `home` with "~" in every string inside `value` where it stands as a whole path
// prefix ("/home/al/x" and "/home/al" become "~/x" and "~", "/home/alice" stays).
void hide_home(rapidjson::Value& value, rapidjson::Document::AllocatorType& alloc, std::string_view home);

// The same on one string.
std::string hide_home_in(std::string_view text, std::string_view home);

// The current user's home folder ($HOME, else the password database), without a trailing '/'.
std::string home_folder();

}  // namespace toolhost::policy
