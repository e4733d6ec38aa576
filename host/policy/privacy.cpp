#include "host/policy/privacy.hpp"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <vector>

#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <toolhost/sdk/json.hpp>

namespace toolhost::policy {
namespace {

// A path component continues after the match: the match is not the whole home folder.
bool continues_name(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
         c == '.' || static_cast<unsigned char>(c) >= 0x80;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The character at `at` as written literally, as %XX, or (a slash) as "\/": its value and how
// many bytes spell it.
std::optional<std::pair<char, size_t>> char_at(std::string_view text, size_t at) {
  if (at >= text.size()) return std::nullopt;
  if (text[at] == '%' && at + 2 < text.size()) {
    const int hi = hex_digit(text[at + 1]);
    const int lo = hex_digit(text[at + 2]);
    if (hi >= 0 && lo >= 0) return std::pair{static_cast<char>(hi * 16 + lo), size_t{3}};
  }
  if (text[at] == '\\' && at + 1 < text.size() && text[at + 1] == '/') return std::pair{'/', size_t{2}};
  return std::pair{text[at], size_t{1}};
}

// The end of `home` spelled from `at` on, in any mix of spellings, or npos.
size_t match_end(std::string_view text, size_t at, std::string_view home) {
  for (char want : home) {
    auto c = char_at(text, at);
    if (!c || c->first != want) return std::string_view::npos;
    at += c->second;
  }
  return at;
}

bool worth_a_look(std::string_view text, std::string_view home) {
  return text.find(home) != std::string_view::npos || text.find('%') != std::string_view::npos ||
         text.find("\\/") != std::string_view::npos;
}

void hide_string(rapidjson::Value& value, rapidjson::Document::AllocatorType& alloc, std::string_view home) {
  std::string_view s(value.GetString(), value.GetStringLength());
  if (!worth_a_look(s, home)) return;
  std::string replaced = hide_home_in(s, home);
  if (replaced.size() != s.size() || replaced != s) {
    value.SetString(replaced.data(), static_cast<rapidjson::SizeType>(replaced.size()), alloc);
  }
}

// Copies a JSON-RPC message (or batch) from a SAX reader to a writer, filtering every string
// and key, and numbers as written (a DOM would turn 2^70 into 1.1805916207174113e21). The
// values of a message's "id" and of params.progressToken are the client's, copied unchanged.
class message_filter {
 public:
  message_filter(rapidjson::Writer<rapidjson::StringBuffer>& out, std::string_view home) : out_(out), home_(home) {}

  bool Null() { return done(out_.Null()); }
  bool Bool(bool b) { return done(out_.Bool(b)); }
  bool Int(int i) { return done(out_.Int(i)); }
  bool Uint(unsigned u) { return done(out_.Uint(u)); }
  bool Int64(int64_t i) { return done(out_.Int64(i)); }
  bool Uint64(uint64_t u) { return done(out_.Uint64(u)); }
  bool Double(double d) { return done(out_.Double(d)); }
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    return done(out_.RawValue(s, n, rapidjson::kNumberType));
  }
  bool String(const char* s, rapidjson::SizeType n, bool) {
    if (keep_next_) return done(out_.String(s, n));
    return done(write(s, n, false));
  }
  bool Key(const char* s, rapidjson::SizeType n, bool) {
    const std::string_view key(s, n);
    const int message = root_array_ ? 2 : 1;  // depth of a message's own members
    keep_next_ =
        (depth_ == message && key == "id") || (depth_ == message + 1 && keys_.size() > static_cast<size_t>(message) &&
                                               keys_[message] == "params" && key == "progressToken");
    if (keys_.size() <= static_cast<size_t>(depth_)) keys_.resize(depth_ + 1);
    keys_[depth_] = std::string(key);
    return write(s, n, true);
  }
  bool StartObject() { return open(out_.StartObject()); }
  bool EndObject(rapidjson::SizeType) { return close(out_.EndObject()); }
  bool StartArray() {
    if (depth_ == 0) root_array_ = true;
    return open(out_.StartArray());
  }
  bool EndArray(rapidjson::SizeType) { return close(out_.EndArray()); }

 private:
  bool write(const char* s, rapidjson::SizeType n, bool key) {
    const std::string_view text(s, n);
    if (!worth_a_look(text, home_)) return key ? out_.Key(s, n) : out_.String(s, n);
    const std::string hidden = hide_home_in(text, home_);
    const auto size = static_cast<rapidjson::SizeType>(hidden.size());
    return key ? out_.Key(hidden.data(), size) : out_.String(hidden.data(), size);
  }
  bool done(bool ok) {
    keep_next_ = false;
    return ok;
  }
  bool open(bool ok) {
    keep_next_ = false;
    ++depth_;
    return ok;
  }
  bool close(bool ok) {
    --depth_;
    return ok;
  }

  rapidjson::Writer<rapidjson::StringBuffer>& out_;
  std::string_view home_;
  int depth_ = 0;
  bool root_array_ = false;
  bool keep_next_ = false;
  std::vector<std::string> keys_;  // the key being read at each depth
};

}  // namespace

std::string hide_home_in(std::string_view text, std::string_view home) {
  if (home.size() < 2) return std::string(text);  // "" or "/": nothing sensible to hide
  std::string out;
  size_t copied = 0;
  for (size_t i = 0; i < text.size();) {
    const size_t end = match_end(text, i, home);
    if (end == std::string_view::npos) {
      ++i;
      continue;
    }
    const auto next = char_at(text, end);
    if (next && continues_name(next->first)) {  // "/home/alice": not the home folder
      i = end;
      continue;
    }
    out.append(text.substr(copied, i - copied));
    out += '~';
    copied = i = end;
  }
  if (copied == 0) return std::string(text);
  out.append(text.substr(copied));
  return out;
}

void hide_home(rapidjson::Value& value, rapidjson::Document::AllocatorType& alloc, std::string_view home) {
  if (value.IsString()) {
    hide_string(value, alloc, home);
  } else if (value.IsArray()) {
    for (auto& item : value.GetArray()) hide_home(item, alloc, home);
  } else if (value.IsObject()) {
    for (auto& m : value.GetObject()) {
      hide_string(m.name, alloc, home);
      hide_home(m.value, alloc, home);
    }
  }
}

std::string hide_home_in_message(std::string json, std::string_view home) {
  if (home.size() < 2 || !worth_a_look(json, home)) return json;
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  message_filter filter(writer, home);
  rapidjson::Reader reader;
  rapidjson::StringStream in(json.c_str());
  if (!reader.Parse<rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseStopWhenDoneFlag>(in, filter)) {
    return hide_home_in(json, home);  // not JSON: filter the bytes themselves
  }
  return std::string(buffer.GetString(), buffer.GetSize());
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
