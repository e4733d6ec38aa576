// Privacy filters a server opts into: replacing the home folder with "~" in everything the
// server sends to its clients.
#pragma once

#include <string>
#include <string_view>

#include <rapidjson/document.h>

namespace toolhost::policy {

// Replaces `home` with "~" wherever it stands as a whole path prefix ("/home/al/x" and
// "/home/al" become "~/x" and "~", "/home/alice" stays), including where it is written
// percent-encoded ("%2Fhome%2Fal", any of its characters as %XX) or with JSON-escaped slashes
// ("\/home\/al", as in JSON text inside a string).
std::string hide_home_in(std::string_view text, std::string_view home);

// The same on every string inside `value`, object keys included.
void hide_home(rapidjson::Value& value, rapidjson::Document::AllocatorType& alloc, std::string_view home);

// The same on one JSON-RPC message the server sends (or a batch of them), except what the
// client chose and must get back unchanged to match it: the message's "id" and its
// params.progressToken. Returns the message text, rewritten only when something was hidden.
std::string hide_home_in_message(std::string json, std::string_view home);

// The current user's home folder ($HOME, else the password database), without a trailing '/'.
std::string home_folder();

}  // namespace toolhost::policy
