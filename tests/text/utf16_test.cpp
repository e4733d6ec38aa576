// toolhost::text against Python's utf-16-le codec: the expected UTF-8 of the first two cases is
// what `bytes.fromhex(in).decode("utf-16-le", errors="replace").encode("utf-8")` gives. Where
// toolhost's rules differ from the codec's (an odd last byte is dropped, not replaced; the
// options), the comment says so.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include <toolhost/text/utf16.hpp>

namespace {

std::vector<uint8_t> from_hex(const std::string& hex) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}

std::string hex_of(const std::string& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

std::string convert(const std::string& hex, toolhost::text::utf16_options o = {}) {
  return hex_of(toolhost::text::utf16le_to_utf8(from_hex(hex), o));
}

}  // namespace

TEST_CASE("UTF-16LE becomes the UTF-8 Python's codec gives") {
  CHECK(convert("6e0074006f0073006b0072006e006c002e00650078006500") == "6e746f736b726e6c2e657865");  // ntoskrnl.exe
  CHECK(convert("50007200fc00660075006e006700e9002d4e8765") ==
        "5072c3bc66756e67c3a9e4b8ade69687");             // two- and three-byte forms
  CHECK(convert("61003dd800de6200") == "61f09f988062");  // a surrogate pair: U+1F600
}

TEST_CASE("what is not a character becomes U+FFFD and nothing fails") {
  CHECK(convert("3d0000d84100") == "3defbfbd41");  // a high half followed by a letter
  CHECK(convert("00dc") == "efbfbd");              // a low half alone
  CHECK(convert("00d8") == "efbfbd");              // a high half at the end
  CHECK(convert("410042") == "41");                // an odd last byte is ignored (Python: U+FFFD)
  CHECK(convert("") == "");
}

TEST_CASE("a C string stops at its NUL; printable text shows controls as dots") {
  CHECK(convert("41000000420000", {.stop_at_nul = true}) == "41");
  CHECK(convert("410000004200", {}) == "410042");  // a counted string carries its NULs
  CHECK(convert("41000a00090042007f00", {.printable = true}) == "412e2e422e");
  std::string out;
  toolhost::text::append_utf8(out, 0x110000);  // past Unicode
  CHECK(hex_of(out) == "efbfbd");
}
