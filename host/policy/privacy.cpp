#include "host/policy/privacy.hpp"

#include <toolhost/sdk/strings.hpp>
#include <pwd.h>
#include <unistd.h>

#include <cstdlib>

namespace toolhost::policy {
namespace {

// A path component continues after the match: the match is not the whole home folder.
bool continues_name(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || static_cast<unsigned char>(c) >= 0x80;
}

}  // namespace

std::string hide_home_in(std::string_view text, std::string_view home) {
  if (home.size() < 2) return std::string(text);  // "" or "/": nothing sensible to hide
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t hit = text.find(home, pos);
    if (hit == std::string_view::npos) break;
    const size_t end = hit + home.size();
    if (end < text.size() && continues_name(text[end])) {
      out.append(text.substr(pos, end - pos));
    } else {
      out.append(text.substr(pos, hit - pos));
      out += '~';
    }
    pos = end;
  }
  if (pos == 0) return std::string(text);
  out.append(text.substr(pos));
  return out;
}

void hide_home(rapidjson::Value& value, rapidjson::Document::AllocatorType& alloc, std::string_view home) {
  if (value.IsString()) {
    std::string_view s(value.GetString(), value.GetStringLength());
    if (s.find(home) == std::string_view::npos) return;
    std::string replaced = hide_home_in(s, home);
    value.SetString(replaced.data(), static_cast<rapidjson::SizeType>(replaced.size()), alloc);
  } else if (value.IsArray()) {
    for (auto& item : value.GetArray()) hide_home(item, alloc, home);
  } else if (value.IsObject()) {
    for (auto& m : value.GetObject()) hide_home(m.value, alloc, home);
  }
}

std::string home_folder() {
  std::string home;
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0') {
    home = h;
  } else if (const passwd* pw = getpwuid(getuid()); pw != nullptr && pw->pw_dir != nullptr) {
    home = pw->pw_dir;
  }
  while (home.size() > 1 && home.back() == '/') home.pop_back();
  return home;
}

}  // namespace toolhost::policy
