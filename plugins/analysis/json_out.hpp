// Writing answers: RapidJSON's writer with the few shapes every tool uses (addresses, text from
// the binary, REA's pages).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <toolhost/analysis/names.hpp>
#include <toolhost/analysis/strings.hpp>

namespace toolhost::analysis_server {

using json_writer = rapidjson::Writer<rapidjson::StringBuffer>;

inline void put(json_writer& w, std::string_view s) { w.String(s.data(), static_cast<rapidjson::SizeType>(s.size())); }
// Text from the binary (symbol names) may be any bytes; invalid UTF-8 becomes U+FFFD.
inline void put_text(json_writer& w, std::string_view s) { put(w, analysis::valid_utf8(s)); }
inline void key(json_writer& w, std::string_view k) { w.Key(k.data(), static_cast<rapidjson::SizeType>(k.size())); }
inline void put_address(json_writer& w, uint64_t a) { put(w, analysis::hex_address(a)); }

// A JSON document under construction.
class json_text {
 public:
  json_writer& w() noexcept { return writer_; }
  std::string str() const { return std::string(buffer_.GetString(), buffer_.GetSize()); }

 private:
  rapidjson::StringBuffer buffer_;
  json_writer writer_{buffer_};
};

// REA's list page: {items, offset, limit, total, has_more, next_offset}. `item(i)` writes
// element i of the whole list.
template <class Item>
void write_page(json_writer& w, uint64_t offset, uint64_t limit, uint64_t total, Item&& item) {
  const uint64_t end = offset >= total ? offset : std::min<uint64_t>(total, offset + limit);
  w.StartObject();
  key(w, "items");
  w.StartArray();
  for (uint64_t i = offset; i < end; ++i) item(static_cast<size_t>(i));
  w.EndArray();
  key(w, "offset");
  w.Uint64(offset);
  key(w, "limit");
  w.Uint64(limit);
  key(w, "total");
  w.Uint64(total);
  key(w, "next_offset");
  if (end < total)
    w.Uint64(end);
  else
    w.Null();
  key(w, "has_more");
  w.Bool(end < total);
  w.EndObject();
}

// REA's bounded collection inside a larger answer: {items, total, returned, truncated,
// next_offset}; `total` is null when the scan that produced the items stopped early.
template <class Item>
void write_bounded(json_writer& w, size_t count, size_t offset, size_t limit, bool scan_truncated, Item&& item) {
  const size_t start = std::min(offset, count);
  const size_t end = std::min(count, start + limit);
  w.StartObject();
  key(w, "items");
  w.StartArray();
  for (size_t i = start; i < end; ++i) item(i);
  w.EndArray();
  key(w, "total");
  if (scan_truncated)
    w.Null();
  else
    w.Uint64(count);
  key(w, "returned");
  w.Uint64(end - start);
  key(w, "truncated");
  w.Bool(scan_truncated || end < count);
  key(w, "next_offset");
  if (end < count)
    w.Uint64(end);
  else
    w.Null();
  w.EndObject();
}

}  // namespace toolhost::analysis_server
