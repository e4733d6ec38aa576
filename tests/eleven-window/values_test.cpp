// The argument checks the plugin and the window share: addresses, names, bytes, enums.
#include <catch2/catch.hpp>

#include <string>

#include <toolhost/eleven/values.hpp>

namespace eleven = toolhost::eleven;

TEST_CASE("addresses are 0x-prefixed hexadecimal", "[values]") {
  CHECK(*eleven::parse_address("0x401136") == 0x401136);
  CHECK(*eleven::parse_address("0X100003F2C") == 0x100003f2c);
  CHECK(*eleven::parse_address("0xffffffffffffffff") == UINT64_MAX);
  for (const char* bad : {"401136", "0x", "", "0x12g4", "4198710", "-0x10", "0x 10", " 0x10", "0x10 "}) {
    INFO(bad);
    auto a = eleven::parse_address(bad);
    REQUIRE_FALSE(a.ok());
    CHECK(std::string(a.status().message()).find("hexadecimal with a 0x prefix") != std::string::npos);
  }
  auto long_one = eleven::parse_address("0x10000000000000000");
  REQUIRE_FALSE(long_one.ok());
  CHECK(std::string(long_one.status().message()).find("more than 16") != std::string::npos);
  CHECK(eleven::format_address(0x401136) == "0x401136");
  CHECK(eleven::format_address(0) == "0x0");
}

TEST_CASE("Ghidra function names pad the address to 8 lowercase digits", "[values]") {
  CHECK(eleven::ghidra_function_name(0x401136) == "FUN_00401136");
  CHECK(eleven::ghidra_function_name(0x100001234) == "FUN_100001234");
  CHECK(eleven::ghidra_function_name(0x1139) == "FUN_00001139");
  CHECK(eleven::parse_ghidra_function_name("FUN_00401136") == 0x401136);
  CHECK(eleven::parse_ghidra_function_name("FUN_100001234") == 0x100001234);
  CHECK_FALSE(eleven::parse_ghidra_function_name("FUN_401136"));    // not padded as Ghidra does
  CHECK_FALSE(eleven::parse_ghidra_function_name("FUN_00401ABC"));  // Ghidra writes lowercase
  CHECK_FALSE(eleven::parse_ghidra_function_name("check_license"));
}

TEST_CASE("new names must be C identifiers", "[values]") {
  for (const char* good : {"check_license_key", "_start", "a", "x86_64", "FUN_00401136"}) {
    INFO(good);
    CHECK(eleven::check_new_name(good).ok());
  }
  for (const char* bad : {"", "1abc", "check license", "check-license", "int", "while", "na\xc3\xafve", "a.b"}) {
    INFO(bad);
    auto s = eleven::check_new_name(bad);
    REQUIRE_FALSE(s.ok());
    CHECK_FALSE(s.message().empty());
  }
  CHECK(
      std::string(eleven::check_new_name("check-license").message()).find("\"check-license\" is not a C identifier") ==
      0);
  CHECK(std::string(eleven::check_new_name("int").message()).find("C keyword") != std::string::npos);
  CHECK_FALSE(eleven::check_new_name(std::string(256, 'a')).ok());
  CHECK(eleven::check_new_name(std::string(255, 'a')).ok());
}

TEST_CASE("hex bytes accept both spellings of the document", "[values]") {
  auto compact = eleven::parse_hex_bytes("1f2003d5");
  REQUIRE(compact.ok());
  CHECK(*compact == std::vector<uint8_t>{0x1f, 0x20, 0x03, 0xd5});
  auto spaced = eleven::parse_hex_bytes("90 90");
  REQUIRE(spaced.ok());
  CHECK(*spaced == std::vector<uint8_t>{0x90, 0x90});
  CHECK(eleven::format_bytes(*compact) == "1f 20 03 d5");
  for (const char* bad : {"", "9", "909", "zz", "0x90", "9 0"}) {
    INFO(bad);
    CHECK_FALSE(eleven::parse_hex_bytes(bad).ok());
  }
  CHECK_FALSE(eleven::parse_hex_bytes(std::string(2 * 4097, 'a')).ok());
}

TEST_CASE("views, code types and number formats are the document's", "[values]") {
  CHECK(eleven::check_view("graph").ok());
  CHECK_FALSE(eleven::check_view("").ok());
  CHECK(std::string(eleven::check_view("tree").message()) ==
        "\"tree\" is not a view: use pseudocode, assembly, graph or hex.");
  CHECK(eleven::check_code_type("").ok());
  CHECK(eleven::check_code_type("cstring").ok());
  CHECK_FALSE(eleven::check_code_type("string").ok());
  CHECK(eleven::check_number_format("").ok());
  CHECK(eleven::check_number_format("char").ok());
  CHECK_FALSE(eleven::check_number_format("octal").ok());
}
