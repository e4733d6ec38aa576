// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: small RapidJSON helpers shared by the SDK, the host and plugins.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace toolhost::sdk {

// RapidJSON's working memory taken from a buffer on the caller's stack before the heap: a
// writer's and a reader's stack, a parsed document's values. By default RapidJSON mallocs an
// allocator object and a block for each stack and a 64 KiB first chunk for a document's values:
// 3-6 mallocs per parse or write, most of the 47 an echo tools/call made (callgrind, bench/mcp).
// Past the buffer it takes 64 KiB chunks from the heap as before. Not copyable; nothing it holds
// outlives it.
template <size_t Size>
class scratch_memory {
 public:
  scratch_memory() : allocator_(bytes_, Size) {}
  scratch_memory(const scratch_memory&) = delete;
  scratch_memory& operator=(const scratch_memory&) = delete;
  rapidjson::MemoryPoolAllocator<>* get() noexcept { return &allocator_; }

 private:
  alignas(8) char bytes_[Size];
  rapidjson::MemoryPoolAllocator<> allocator_;
};

// A parsed document whose values and parse stack come from `scratch_memory` (scratch_document
// doc(values.get(), 1024, stack.get())); it is a rapidjson::Value like any other.
using scratch_document =
    rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>, rapidjson::MemoryPoolAllocator<>>;

namespace detail {

// A RapidJSON output stream that fills a buffer of its own and only then a std::string: a short
// text (an id, a small object) costs the one allocation of the string it ends as, or none. The
// writer reserves before it writes a run of characters (PutReserve below), so each character is
// one store.
class json_text {
 public:
  using Ch = char;
  json_text() = default;
  json_text(const json_text&) = delete;
  json_text& operator=(const json_text&) = delete;

  void reserve(size_t count) {
    if (static_cast<size_t>(end_ - cur_) < count) grow(count);
  }
  void put_unsafe(char c) { *cur_++ = c; }
  void Put(char c) {
    reserve(1);
    put_unsafe(c);
  }
  void Flush() {}
  std::string take() {
    if (spill_.empty()) return std::string(inline_, cur_);
    spill_.resize(static_cast<size_t>(cur_ - spill_.data()));
    if (spill_.capacity() > 2 * spill_.size()) spill_.shrink_to_fit();  // a string's reserve is 6 bytes a character
    return std::move(spill_);
  }

 private:
  void grow(size_t count) {
    const size_t used = static_cast<size_t>(cur_ - (spill_.empty() ? inline_ : spill_.data()));
    std::string bigger(std::max(2 * used, used + count), '\0');
    std::memcpy(bigger.data(), spill_.empty() ? inline_ : spill_.data(), used);
    spill_ = std::move(bigger);
    cur_ = spill_.data() + used;
    end_ = spill_.data() + spill_.size();
  }

  char inline_[256];
  char* cur_ = inline_;
  char* end_ = inline_ + sizeof inline_;
  std::string spill_;  // once the text outgrows inline_: its characters, then unused room
};

}  // namespace detail
}  // namespace toolhost::sdk

namespace rapidjson {
template <>
inline void PutReserve(toolhost::sdk::detail::json_text& stream, size_t count) {
  stream.reserve(count);
}
template <>
inline void PutUnsafe(toolhost::sdk::detail::json_text& stream, char c) {
  stream.put_unsafe(c);
}
}  // namespace rapidjson

namespace toolhost::sdk {
namespace detail {

using json_text_writer =
    rapidjson::Writer<json_text, rapidjson::UTF8<>, rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>>;

}  // namespace detail

// Compact JSON text of a value (never contains a raw newline, as stdio framing needs).
inline std::string to_json(const rapidjson::Value& value) {
  scratch_memory<1024> levels;  // the writer's stack: 16 bytes per level of nesting, 32 at first
  detail::json_text out;
  detail::json_text_writer writer(out, levels.get());
  value.Accept(writer);
  return out.take();
}

// `text` as a JSON string literal, quotes included.
inline std::string quote(std::string_view text) {
  detail::json_text out;
  detail::json_text_writer writer(out);  // a lone string never uses the writer's stack
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return out.take();
}

// Parses JSON text. On failure returns nullopt and, if `error` is given, a sentence naming the
// offset and the problem.
inline std::optional<rapidjson::Document> parse_json(std::string_view text, std::string* error = nullptr) {
  rapidjson::Document doc;
  doc.Parse(text.data(), text.size());  // trailing text after the value is an error
  if (doc.HasParseError()) {
    if (error != nullptr) {
      *error = std::string("invalid JSON at offset ") + std::to_string(doc.GetErrorOffset()) + ": " +
               rapidjson::GetParseError_En(doc.GetParseError());
    }
    return std::nullopt;
  }
  return doc;
}

// A member of an object, or nullptr when `value` is not an object or lacks it.
inline const rapidjson::Value* member(const rapidjson::Value& value, std::string_view name) {
  if (!value.IsObject()) return nullptr;
  auto it = value.FindMember(
      rapidjson::Value(rapidjson::StringRef(name.data(), static_cast<rapidjson::SizeType>(name.size()))));
  return it == value.MemberEnd() ? nullptr : &it->value;
}

inline std::optional<std::string_view> string_member(const rapidjson::Value& value, std::string_view name) {
  const rapidjson::Value* m = member(value, name);
  if (m == nullptr || !m->IsString()) return std::nullopt;
  return std::string_view(m->GetString(), m->GetStringLength());
}

inline std::string_view as_view(const rapidjson::Value& value) {
  return value.IsString() ? std::string_view(value.GetString(), value.GetStringLength()) : std::string_view();
}

// The JSON type name a schema would use for `value` ("integer" for whole numbers).
inline const char* json_type_name(const rapidjson::Value& value) {
  if (value.IsNull()) return "null";
  if (value.IsBool()) return "boolean";
  if (value.IsString()) return "string";
  if (value.IsArray()) return "array";
  if (value.IsObject()) return "object";
  if (value.IsInt64() || value.IsUint64()) return "integer";
  return "number";
}

}  // namespace toolhost::sdk
