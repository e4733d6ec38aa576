// dt over the neutral type model: WinDbg's words and values, filters, depth, JSON.
#include <catch2/catch.hpp>

#include <cstring>
#include <map>

#include <rapidjson/document.h>
#include <toolhost/types/dt.hpp>
#include <toolhost/types/simple_table.hpp>

using namespace toolhost::types;

namespace {

struct fixture {
  simple_table t{8};
  type_id u8, i8, u16, u32, i32, u64, wchar, vd, b, f64;
  type_id list, ustr, state, object, inner, fnptr;

  fixture() {
    u8 = t.add({.k = kind::base, .name = "unsigned char", .size = 1, .enc = encoding::unsigned_char});
    i8 = t.add({.k = kind::base, .name = "char", .size = 1, .enc = encoding::signed_char});
    u16 = t.add({.k = kind::base, .name = "unsigned short", .size = 2, .enc = encoding::unsigned_integer});
    u32 = t.add({.k = kind::base, .name = "unsigned long", .size = 4, .enc = encoding::unsigned_integer});
    i32 = t.add({.k = kind::base, .name = "long", .size = 4, .enc = encoding::signed_integer});
    u64 = t.add({.k = kind::base, .name = "unsigned __int64", .size = 8, .enc = encoding::unsigned_integer});
    wchar = t.add({.k = kind::base, .name = "wchar_t", .size = 2, .enc = encoding::wide_char});
    vd = t.add({.k = kind::base, .name = "void", .enc = encoding::none});
    b = t.add({.k = kind::base, .name = "bool", .size = 1, .enc = encoding::boolean});
    f64 = t.add({.k = kind::base, .name = "double", .size = 8, .enc = encoding::floating});
    list = t.add({.k = kind::structure, .name = "_LIST_ENTRY", .size = 16});
    const type_id list_ptr = t.add({.k = kind::pointer, .size = 8, .target = list});
    t.at(list).members = {{"Flink", 0, list_ptr}, {"Blink", 8, list_ptr}};
    const type_id wptr = t.add({.k = kind::pointer, .size = 8, .target = wchar});
    ustr = t.add({.k = kind::structure,
                  .name = "_UNICODE_STRING",
                  .size = 16,
                  .members = {{"Length", 0, u16}, {"MaximumLength", 2, u16}, {"Buffer", 8, wptr}}});
    state = t.add({.k = kind::enumeration,
                   .name = "_STATE",
                   .size = 4,
                   .target = i32,
                   .enumerators = {{"Idle", 0}, {"Running", 2}, {"Gone", -1}}});
    inner =
        t.add({.k = kind::structure, .name = "_INNER", .size = 8, .members = {{"Depth", 0, u32}, {"Mask", 4, u32}}});
    const type_id fn = t.add({.k = kind::function, .target = i32});
    fnptr = t.add({.k = kind::pointer, .size = 8, .target = fn});
    const type_id name = t.add({.k = kind::array, .size = 15, .target = u8, .count = 15});
    const type_id counts = t.add({.k = kind::array, .size = 16, .target = u32, .count = 4});
    const type_id vptr = t.add({.k = kind::pointer, .size = 8, .target = vd});
    const type_id ulong = t.add({.k = kind::alias, .name = "ULONG", .size = 4, .target = u32});
    // A DWARF-style anonymous union member and a PDB-style flattened bitfield pair.
    const type_id anon = t.add({.k = kind::union_, .size = 4, .members = {{"Flags", 0, ulong}}});
    object = t.add({.k = kind::structure,
                    .name = "_OBJECT",
                    .size = 0x200,
                    .members = {{"Links", 0x0, list},
                                {"", 0x10, anon},
                                {"Active", 0x10, u32, 0, 1},
                                {"Priority", 0x10, u32, 1, 3},
                                {"State", 0x14, state},
                                {"Name", 0x18, name},
                                {"Path", 0x28, ustr},
                                {"Callback", 0x38, fnptr},
                                {"Counts", 0x40, counts},
                                {"Context", 0x50, vptr},
                                {"Letter", 0x58, i8},
                                {"Ready", 0x59, b},
                                {"Signed", 0x5c, i32},
                                {"Big", 0x60, u64},
                                {"Ratio", 0x68, f64},
                                {"Inner", 0x70, inner},
                                {"ExtraordinarilyLongName", 0x100, u32}}});
  }
};

// A flat little-endian memory image at `base`.
struct memory {
  uint64_t base;
  std::vector<uint8_t> bytes;
  memory(uint64_t b, size_t size) : base(b), bytes(size) {}
  template <typename T>
  void put(uint64_t at, T v) {
    std::memcpy(bytes.data() + (at - base), &v, sizeof v);
  }
  memory_reader reader() const {
    return [this](uint64_t a, std::span<uint8_t> out) -> size_t {
      if (a < base || a >= base + bytes.size()) return 0;
      const size_t n = std::min<size_t>(out.size(), base + bytes.size() - a);
      std::memcpy(out.data(), bytes.data() + (a - base), n);
      return n;
    };
  }
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    out.push_back(text.substr(start, end - start));
    start = end == std::string::npos ? text.size() : end + 1;
  }
  return out;
}

bool has_line(const std::string& text, const std::string& line) {
  for (const auto& l : lines(text)) {
    if (l == line) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("dt of a type prints WinDbg's layout", "[types]") {
  fixture f;
  dt_request r{f.t, f.object, "mod!_OBJECT"};
  auto out = render_dt(r);
  REQUIRE(out.ok());
  const std::string& text = out->text;
  CHECK(lines(text).front() == "   +0x000 Links            : _LIST_ENTRY");
  CHECK(has_line(text, "   +0x010 Flags            : Uint4B"));  // through the anonymous union and the alias
  CHECK(has_line(text, "   +0x010 Active           : Pos 0, 1 Bit"));
  CHECK(has_line(text, "   +0x010 Priority         : Pos 1, 3 Bits"));
  CHECK(has_line(text, "   +0x014 State            : _STATE"));
  CHECK(has_line(text, "   +0x018 Name             : [15] UChar"));
  CHECK(has_line(text, "   +0x038 Callback         : Ptr64     long"));
  CHECK(has_line(text, "   +0x040 Counts           : [4] Uint4B"));
  CHECK(has_line(text, "   +0x050 Context          : Ptr64 Void"));
  CHECK(has_line(text, "   +0x058 Letter           : Char"));
  CHECK(has_line(text, "   +0x059 Ready            : Bool"));
  CHECK(has_line(text, "   +0x05c Signed           : Int4B"));
  CHECK(has_line(text, "   +0x060 Big              : Uint8B"));
  CHECK(has_line(text, "   +0x068 Ratio            : Float"));
  CHECK(has_line(text, "   +0x100 ExtraordinarilyLongName : Uint4B"));
  CHECK(text.find("Flink") == std::string::npos);  // no expansion without -r

  r.options.depth = 1;
  auto deep = render_dt(r);
  REQUIRE(deep.ok());
  CHECK(has_line(deep->text, "      +0x000 Flink            : Ptr64 _LIST_ENTRY"));
  CHECK(has_line(deep->text, "      +0x004 Mask             : Uint4B"));

  r.options.depth = 0;
  r.options.fields = {"Inner.Mask", "Pri*"};
  auto filtered = render_dt(r);
  REQUIRE(filtered.ok());
  CHECK(lines(filtered->text) == std::vector<std::string>{"   +0x010 Priority         : Pos 1, 3 Bits",
                                                          "   +0x070 Inner            : _INNER",
                                                          "      +0x004 Mask             : Uint4B"});
}

TEST_CASE("dt at an address shows the values in WinDbg's words", "[types]") {
  fixture f;
  const uint64_t at = 0xffffa7043f68e000;
  memory m(at, 0x1000);
  m.put<uint64_t>(at + 0x0, 0xffff8287ad6cf488);
  m.put<uint64_t>(at + 0x8, 0xfffff80055c37e80);
  m.put<uint32_t>(at + 0x10, 0xd);  // Active 1, Priority 6
  m.put<int32_t>(at + 0x14, 2);
  std::memcpy(m.bytes.data() + 0x18, "System", 7);
  const char16_t path[] = u"C:\\w";
  std::memcpy(m.bytes.data() + 0x800, path, 8);
  m.put<uint16_t>(at + 0x28, 8);
  m.put<uint16_t>(at + 0x2a, 10);
  m.put<uint64_t>(at + 0x30, at + 0x800);
  m.put<uint64_t>(at + 0x38, 0xfffff80012345678);
  m.put<uint32_t>(at + 0x40, 7);
  m.put<uint64_t>(at + 0x50, 0);
  m.put<char>(at + 0x58, 'A');
  m.put<uint8_t>(at + 0x59, 1);
  m.put<int32_t>(at + 0x5c, -5);
  m.put<uint64_t>(at + 0x60, 4);
  m.put<double>(at + 0x68, 1.5);
  m.put<uint32_t>(at + 0x74, 0x33);
  dt_request r{f.t, f.object, "mod!_OBJECT", at, m.reader()};
  r.describe = [](uint64_t a) { return a == 0xfffff80012345678 ? std::string("mod!Handler") : std::string(); };
  auto out = render_dt(r);
  REQUIRE(out.ok());
  const std::string& text = out->text;
  CHECK(lines(text).front() == "mod!_OBJECT");
  CHECK(has_line(text, "   +0x000 Links            : _LIST_ENTRY [ 0xffff8287`ad6cf488 - 0xfffff800`55c37e80 ]"));
  CHECK(has_line(text, "   +0x010 Flags            : 0xd"));
  CHECK(has_line(text, "   +0x010 Active           : 0y1"));
  CHECK(has_line(text, "   +0x010 Priority         : 0y110"));
  CHECK(has_line(text, "   +0x014 State            : 0n2 ( Running )"));
  CHECK(has_line(text, "   +0x018 Name             : [15]  \"System\""));
  CHECK(has_line(text, "   +0x028 Path             : _UNICODE_STRING \"C:\\w\""));
  CHECK(has_line(text, "   +0x038 Callback         : 0xfffff800`12345678     long  mod!Handler"));
  CHECK(has_line(text, "   +0x040 Counts           : [4] 0x7"));
  CHECK(has_line(text, "   +0x050 Context          : (null)"));
  CHECK(has_line(text, "   +0x058 Letter           : 65 'A'"));
  CHECK(has_line(text, "   +0x059 Ready            : True"));
  CHECK(has_line(text, "   +0x05c Signed           : 0n-5"));
  CHECK(has_line(text, "   +0x060 Big              : 0x00000000`00000004"));
  CHECK(has_line(text, "   +0x068 Ratio            : 1.5"));

  rapidjson::Document doc;
  doc.Parse(out->json.c_str());
  REQUIRE(!doc.HasParseError());
  CHECK(std::string(doc["type"].GetString()) == "mod!_OBJECT");
  CHECK(doc["size"].GetUint64() == 0x200);
  std::map<std::string, const rapidjson::Value*> fields;
  for (const auto& field : doc["fields"].GetArray()) fields[field["name"].GetString()] = &field;
  CHECK(std::string((*fields["Name"])["string"].GetString()) == "System");
  CHECK((*fields["State"])["value"].GetInt() == 2);
  CHECK(std::string((*fields["State"])["enumerator"].GetString()) == "Running");
  CHECK(std::string((*fields["Priority"])["value"].GetString()) == "0x6");
  CHECK((*fields["Priority"])["bit_position"].GetUint() == 1);
  CHECK(std::string((*fields["Links"])["flink"].GetString()) == "0xffff8287ad6cf488");
  CHECK((*fields["Signed"])["value"].GetInt() == -5);
  CHECK(fields.count("Flags") == 1);

  // -a: array elements; a path through a pointer follows it.
  r.options.array_elements = 2;
  r.options.fields = {"Counts"};
  auto arrays = render_dt(r);
  REQUIRE(arrays.ok());
  CHECK(has_line(arrays->text, "      [0] 0x7"));
  CHECK(has_line(arrays->text, "      [1] 0"));
  CHECK(has_line(arrays->text, "      ... 2 more elements not shown"));
}

TEST_CASE("dt refuses what it cannot show and bounds what it shows", "[types]") {
  fixture f;
  memory m(0x1000, 0x10);
  dt_request r{f.t, f.object, "mod!_OBJECT", 0x5000, m.reader()};
  auto unreadable = render_dt(r);
  REQUIRE(!unreadable.ok());
  CHECK(std::string(unreadable.status().message()).find("Memory read error") != std::string::npos);

  // Half readable: the rest reads ??.
  memory half(0x2000, 0x20);
  dt_request partly{f.t, f.object, "mod!_OBJECT", 0x2000, half.reader()};
  auto p = render_dt(partly);
  REQUIRE(p.ok());
  CHECK(has_line(p->text, "   +0x040 Counts           : [4] ??"));
  CHECK(p->text.find("not readable") != std::string::npos);

  const type_id declared = f.t.add({.k = kind::structure, .name = "_OPAQUE", .incomplete = true});
  dt_request opaque{f.t, declared, "mod!_OPAQUE"};
  CHECK(!render_dt(opaque).ok());

  dt_request bounded{f.t, f.object, "mod!_OBJECT"};
  bounded.options.max_lines = 3;
  auto b = render_dt(bounded);
  REQUIRE(b.ok());
  CHECK(lines(b->text).size() == 4);
  CHECK(b->text.find("more lines not shown") != std::string::npos);

  // A self-referencing struct with -r64 ends at the depth limit instead of recursing forever.
  simple_table t(8);
  const type_id u32 = t.add({.k = kind::base, .size = 4, .enc = encoding::unsigned_integer});
  const type_id loop = t.add({.k = kind::structure, .name = "_LOOP", .size = 4});
  t.at(loop).members = {{"X", 0, u32}, {"Self", 0, loop}};
  dt_request deep{t, loop, "m!_LOOP"};
  deep.options.depth = 64;
  auto d = render_dt(deep);
  REQUIRE(d.ok());
  CHECK(lines(d->text).size() <= 2 * 65 + 1);
}

TEST_CASE("enumerations, type words and name matching", "[types]") {
  fixture f;
  dt_request r{f.t, f.state, "mod!_STATE"};
  auto out = render_dt(r);
  REQUIRE(out.ok());
  CHECK(lines(out->text) == std::vector<std::string>{"   Idle = 0n0", "   Running = 0n2", "   Gone = 0n-1"});
  CHECK(matching_type_names(f.t, "_*") ==
        std::vector<std::string>{"_INNER", "_LIST_ENTRY", "_OBJECT", "_STATE", "_UNICODE_STRING"});
  CHECK(matching_type_names(f.t, "_l*") == std::vector<std::string>{"_LIST_ENTRY"});
  CHECK(type_word(f.t, f.t.add({.k = kind::pointer, .size = 8, .target = f.fnptr})) == "Ptr64 Ptr64     long");
  simple_table small(4);
  const type_id v = small.add({.k = kind::base, .enc = encoding::none});
  CHECK(type_word(small, small.add({.k = kind::pointer, .size = 4, .target = v})) == "Ptr32 Void");
  CHECK(wildcard_match("Nt*File", "NtCreateFile"));
  CHECK(!wildcard_match("Nt?File", "NtCreateFile"));
}
