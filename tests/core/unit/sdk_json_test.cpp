// sdk::to_json, sdk::quote and sdk::scratch_document against RapidJSON's own defaults (its
// StringBuffer writer and a heap Document) as the oracle, at the sizes where the stack buffers
// end and the heap takes over: texts around the writer's 256-byte inline buffer, nesting past its
// 1 KiB level stack, documents past the 4 KiB of values and 2 KiB of parse stack.
#include <catch2/catch.hpp>

#include <string>

#include <toolhost/sdk/json.hpp>

namespace {

std::string reference_text(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string nested(int depth, const std::string& leaf) {
  std::string text;
  for (int i = 0; i < depth; ++i) text += i % 2 == 0 ? R"({"k":)" : "[";
  text += leaf;
  for (int i = depth - 1; i >= 0; --i) text += i % 2 == 0 ? "}" : "]";
  return text;
}

}  // namespace

TEST_CASE("to_json writes what RapidJSON's own writer writes, short texts and long", "[sdk][json]") {
  for (size_t length : {0, 1, 14, 15, 16, 200, 250, 251, 252, 253, 254, 255, 256, 257, 1023, 1024, 1025, 5000}) {
    rapidjson::Document doc;
    doc.Parse(("{\"s\":\"" + std::string(length, 'x') + "\\n\\u00e9\",\"n\":[1,2.5,null,true]}").c_str());
    REQUIRE_FALSE(doc.HasParseError());
    CHECK(toolhost::sdk::to_json(doc) == reference_text(doc));
    CHECK(toolhost::sdk::to_json(doc["s"]) == reference_text(doc["s"]));
    const std::string text = std::string(length, 'q') + "\"\\\x01";
    rapidjson::Value same(rapidjson::StringRef(text.data(), static_cast<rapidjson::SizeType>(text.size())));
    CHECK(toolhost::sdk::quote(text) == reference_text(same));
  }
}

TEST_CASE("to_json follows nesting past its stack buffer", "[sdk][json]") {
  for (int depth : {1, 31, 32, 33, 63, 64, 65, 200, 1000}) {
    rapidjson::Document doc;
    doc.Parse(nested(depth, R"("leaf")").c_str());
    REQUIRE_FALSE(doc.HasParseError());
    CHECK(toolhost::sdk::to_json(doc) == reference_text(doc));
  }
}

TEST_CASE("a scratch_document parses what a heap Document parses, past its buffers too", "[sdk][json]") {
  std::string big = "[";
  for (int i = 0; i < 2000; ++i) big += (i ? "," : "") + std::string(R"({"name":"item)") + std::to_string(i) + R"("})";
  big += "]";
  for (const std::string& text : {std::string(R"({"a":1})"), nested(300, "[1,2,3]"), big,
                                  std::string(R"({"s":")") + std::string(10000, 'z') + R"("})"}) {
    rapidjson::Document heap;
    heap.Parse(text.c_str());
    REQUIRE_FALSE(heap.HasParseError());
    toolhost::sdk::scratch_memory<4096> values;
    toolhost::sdk::scratch_memory<2048> stack;
    toolhost::sdk::scratch_document doc(values.get(), 1024, stack.get());
    doc.Parse(text.c_str());
    REQUIRE_FALSE(doc.HasParseError());
    CHECK(doc == heap);
    CHECK(toolhost::sdk::to_json(doc) == reference_text(heap));
  }
}

TEST_CASE("a scratch_document reports a broken text as a heap Document does", "[sdk][json]") {
  for (const char* text : {"{", R"({"a":})", "[1,2", "\"open", "nul"}) {
    rapidjson::Document heap;
    heap.Parse(text);
    toolhost::sdk::scratch_memory<4096> values;
    toolhost::sdk::scratch_memory<2048> stack;
    toolhost::sdk::scratch_document doc(values.get(), 1024, stack.get());
    doc.Parse(text);
    CHECK(doc.HasParseError());
    CHECK(doc.GetParseError() == heap.GetParseError());
    CHECK(doc.GetErrorOffset() == heap.GetErrorOffset());
  }
}
