// The headless window's logic without sockets: the project store, function discovery on the
// fixture program, and the window's answers, review, undo and patch copies.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>

#include <rapidjson/document.h>
#include <toolhost/eleven/values.hpp>

#include "program.hpp"
#include "project_store.hpp"
#include "window_state.hpp"

namespace eleven = toolhost::eleven;
namespace fs = std::filesystem;

namespace {

std::map<std::string, uint64_t> nm_functions(const std::string& path) {
  std::map<std::string, uint64_t> out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(("nm " + path).c_str(), "r"), pclose);
  REQUIRE(pipe != nullptr);
  std::array<char, 512> line{};
  while (fgets(line.data(), line.size(), pipe.get()) != nullptr) {
    unsigned long long addr = 0;
    char type = 0;
    char name[400];
    if (std::sscanf(line.data(), "%llx %c %399s", &addr, &type, name) == 3 && (type == 'T' || type == 't')) {
      out[name] = addr;
    }
  }
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A fresh folder with a copy of the fixture binaries, removed afterwards.
struct scratch {
  fs::path dir;
  scratch() {
    dir = fs::temp_directory_path() /
          ("eleven-window-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::remove_all(dir);
    fs::create_directories(dir);
    fs::copy_file(TEST_FIXTURE_DIR "/license", dir / "license");
    fs::copy_file(TEST_FIXTURE_DIR "/license-stripped", dir / "license-stripped");
  }
  ~scratch() { fs::remove_all(dir); }
  static int& counter() {
    static int n = 0;
    return n;
  }
};

rapidjson::Document args(std::initializer_list<std::pair<const char*, const char*>> kv) {
  rapidjson::Document d(rapidjson::kObjectType);
  for (const auto& [k, v] : kv) {
    d.AddMember(rapidjson::Value(k, d.GetAllocator()), rapidjson::Value(v, d.GetAllocator()), d.GetAllocator());
  }
  return d;
}

const eleven::author kClaude{"Claude", "c_123"};

}  // namespace

TEST_CASE("the stripped binary's functions are FUN_<address> at nm's addresses", "[window][program]") {
  const auto expected = nm_functions(TEST_FIXTURE_DIR "/license");
  auto stripped = eleven::program::open(TEST_FIXTURE_DIR "/license-stripped");
  REQUIRE(stripped.ok());
  for (const char* name : {"check_license", "hash_key", "compare_hash", "print_banner", "main"}) {
    INFO(name);
    REQUIRE(expected.count(name) == 1);
    const auto* f = stripped->function_starting(expected.at(name));
    REQUIRE(f != nullptr);
    CHECK(f->original_name == eleven::ghidra_function_name(expected.at(name)));
    CHECK_FALSE(f->from_symbol);
  }
  // PLT stubs carry their import's name, at the address objdump shows for <name@plt>.
  std::map<std::string, uint64_t> plt;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen("objdump -d " TEST_FIXTURE_DIR "/license-stripped", "r"), pclose);
  REQUIRE(pipe != nullptr);
  std::array<char, 512> line{};
  while (fgets(line.data(), line.size(), pipe.get()) != nullptr) {
    unsigned long long addr = 0;
    char name[256];
    int end = 0;  // %n is set only when the whole "<name@plt>:" matched
    if (std::sscanf(line.data(), "%llx <%255[^@>]@plt>:%n", &addr, name, &end) == 2 && end > 0) plt[name] = addr;
  }
  REQUIRE(plt.count("puts") == 1);
  for (const auto& [name, addr] : plt) {
    INFO(name);
    const auto* f = stripped->function_starting(addr);
    REQUIRE(f != nullptr);
    CHECK(f->original_name == name);
  }

  const auto* entry = stripped->function_starting(stripped->elf().entry());
  REQUIRE(entry != nullptr);
  CHECK(entry->original_name == "entry");

  auto symbols = eleven::program::open(TEST_FIXTURE_DIR "/license");
  REQUIRE(symbols.ok());
  const auto* check = symbols->function_starting(expected.at("check_license"));
  REQUIRE(check != nullptr);
  CHECK(check->original_name == "check_license");
  CHECK(check->from_symbol);
}

TEST_CASE("the project store saves atomically and reloads what it saved", "[window][store]") {
  scratch s;
  const fs::path project = s.dir / "p.json";
  auto store = eleven::project_store::load(project, s.dir / "license");
  REQUIRE(store.ok());
  CHECK(store->history().empty());
  store->apply({eleven::mark_kind::name, 0x401000, "check_license"}, kClaude, "renamed 0x401000 to check_license");
  store->apply({eleven::mark_kind::note, 0x401000, "A note."}, kClaude, "note");
  eleven::suggestion sg;
  sg.by = kClaude;
  sg.bytes = eleven::patch{0x401000, {0x90, 0x90}, "Skip it."};
  sg.summary = "Patch 0x401000 to 90 90";
  store->suggest(sg);
  REQUIRE(store->save().ok());
  // No temporary file is left behind next to it.
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(s.dir)) files += e.path().filename().string().rfind(".p.json", 0) == 0;
  CHECK(files == 0);

  auto again = eleven::project_store::load(project, s.dir / "license");
  REQUIRE(again.ok());
  CHECK(again->mark(eleven::mark_kind::name, 0x401000) == "check_license");
  CHECK(again->mark(eleven::mark_kind::note, 0x401000) == "A note.");
  REQUIRE(again->history().size() == 2);
  CHECK(again->history()[0].by.agent == "Claude");
  CHECK(again->history()[0].by.chat == "c_123");
  REQUIRE(again->suggestions().size() == 1);
  CHECK(again->suggestions()[0].bytes->bytes == std::vector<uint8_t>{0x90, 0x90});
  CHECK(again->to_json() == store->to_json());

  // Undo walks back, newest first, and restores what was there before.
  auto u = again->undo();
  REQUIRE(u.ok());
  CHECK_FALSE(again->mark(eleven::mark_kind::note, 0x401000));
  REQUIRE(again->undo().ok());
  CHECK_FALSE(again->mark(eleven::mark_kind::name, 0x401000));
  CHECK(again->undo().status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("the project store refuses a damaged file and another binary's project", "[window][store]") {
  scratch s;
  std::ofstream(s.dir / "bad.json")
      << "{\"format\": \"toolhost-window project 1\", \"marks\": {\"names\": {\"401000\": \"x\"}}";
  auto bad = eleven::project_store::load(s.dir / "bad.json", s.dir / "license");
  REQUIRE_FALSE(bad.ok());
  CHECK(std::string(bad.status().message()).find("is damaged") != std::string::npos);

  auto store = eleven::project_store::load(s.dir / "p.json", s.dir / "license");
  REQUIRE(store.ok());
  REQUIRE(store->save().ok());
  auto other = eleven::project_store::load(s.dir / "p.json", s.dir / "license-stripped");
  REQUIRE_FALSE(other.ok());
  CHECK(std::string(other.status().message()).find("belongs to") != std::string::npos);
}

TEST_CASE("every tool answers the no-file sentence while nothing is open", "[window]") {
  eleven::window_state w({});
  for (const char* tool : {"current_view", "open_function", "set_view", "list_marks", "rename_function", "add_note",
                           "add_comment", "bookmark", "set_code_type", "set_number_format", "propose_patch"}) {
    INFO(tool);
    auto a = w.call_tool(tool, args({}), kClaude);
    CHECK_FALSE(a.ok);
    CHECK(a.text == "No file is open in Eleven. Ask the user to open one.");
  }
}

TEST_CASE("the window renames, logs, reviews, undoes and copies patches", "[window]") {
  scratch s;
  const auto expected = nm_functions(TEST_FIXTURE_DIR "/license");
  const std::string check = eleven::format_address(expected.at("check_license"));
  const std::string fun = eleven::ghidra_function_name(expected.at("check_license"));
  eleven::window_state w({});
  REQUIRE(w.open(s.dir / "license-stripped", s.dir / "project.json").ok());

  auto shown = w.call_tool("open_function", args({{"function", fun.c_str()}}), kClaude);
  CHECK(shown.text == "Showing " + fun + " (" + check + ") to the user.");
  auto renamed =
      w.call_tool("rename_function", args({{"function", check.c_str()}, {"new_name", "check_license"}}), kClaude);
  REQUIRE(renamed.ok);
  CHECK(renamed.text == "Renamed " + fun + " to check_license in the user's project.");
  CHECK(w.call_tool("open_function", args({{"function", "check_license"}}), kClaude).text ==
        "Showing check_license (" + check + ") to the user.");
  auto bad_name = w.call_tool("rename_function", args({{"function", check.c_str()}, {"new_name", "9lives"}}), kClaude);
  CHECK_FALSE(bad_name.ok);
  CHECK(w.call_tool("list_marks", args({}), kClaude).text == "renamed " + check + " to check_license");

  // Review on: edits become suggestions, accepted later under the agent's name.
  w.command("review", [] {
    rapidjson::Document d(rapidjson::kObjectType);
    d.AddMember("on", true, d.GetAllocator());
    return d;
  }());
  auto noted = w.call_tool("add_note", args({{"function", "check_license"}, {"note", "Compares hashes."}}), kClaude);
  REQUIRE(noted.ok);
  CHECK(noted.text.rfind("Suggested to the user", 0) == 0);
  CHECK(w.call_tool("list_marks", args({}), kClaude).text ==
        "renamed " + check +
            " to check_license\nwaiting for the user's review: Note on check_license: Compares hashes.");

  auto patch = w.call_tool("propose_patch",
                           args({{"address", check.c_str()}, {"bytes", "c3"}, {"reason", "Return at once."}}), kClaude);
  REQUIRE(patch.ok);
  CHECK(patch.text.rfind("Suggested to the user: Patch " + check + " to c3", 0) == 0);

  rapidjson::Document one(rapidjson::kObjectType);
  one.AddMember("id", 1, one.GetAllocator());
  REQUIRE(w.command("accept", one).ok);
  CHECK(w.call_tool("list_marks", args({}), kClaude).text ==
        "renamed " + check +
            " to check_license\nnote on check_license: Compares hashes.\n"
            "waiting for the user's review: Patch " +
            check + " to c3");

  const std::string original = slurp(s.dir / "license-stripped");
  rapidjson::Document two(rapidjson::kObjectType);
  two.AddMember("id", 2, two.GetAllocator());
  auto accepted = w.command("accept", two);
  REQUIRE(accepted.ok);
  const fs::path copy = s.dir / "license-stripped.patched";
  REQUIRE(fs::exists(copy));
  CHECK(slurp(s.dir / "license-stripped") == original);
  const std::string patched = slurp(copy);
  REQUIRE(patched.size() == original.size());
  size_t differing = 0;
  for (size_t i = 0; i < original.size(); ++i) differing += original[i] != patched[i];
  CHECK(differing == 1);
  struct stat st {};
  REQUIRE(::stat(copy.c_str(), &st) == 0);
  CHECK((st.st_mode & 0111) != 0);           // still executable
  CHECK_FALSE(w.command("accept", two).ok);  // already accepted

  // Undo goes back through the accepted note, then the rename.
  REQUIRE(w.command("undo", args({})).ok);
  REQUIRE(w.command("undo", args({})).ok);
  CHECK(w.call_tool("list_marks", args({}), kClaude).text ==
        "Nothing is written into the project for license-stripped yet.");
  CHECK(w.call_tool("open_function", args({{"function", "check_license"}}), kClaude).ok == false);
}

TEST_CASE("set_view is refused on the home canvas and works in the workbench", "[window]") {
  scratch s;
  eleven::window_state w({});
  REQUIRE(w.open(s.dir / "license", s.dir / "project.json").ok());
  auto home = w.call_tool("set_view", args({{"view", "assembly"}}), kClaude);
  CHECK_FALSE(home.ok);
  CHECK(home.text.find("home canvas") != std::string::npos);
  CHECK(home.text.find("pseudocode") != std::string::npos);
  rapidjson::Document wb(rapidjson::kObjectType);
  wb.AddMember("canvas", "workbench", wb.GetAllocator());
  REQUIRE(w.command("show", wb).ok);
  CHECK(w.call_tool("set_view", args({{"view", "assembly"}}), kClaude).ok);
  CHECK(w.call_tool("current_view", args({}), kClaude).text.find("\"view\":null") != std::string::npos);
  REQUIRE(w.call_tool("open_function", args({{"function", "main"}}), kClaude).ok);
  CHECK(w.call_tool("current_view", args({}), kClaude).text.find("\"view\":\"assembly\"") != std::string::npos);
}

TEST_CASE("one project is open in one window at a time", "[window]") {
  scratch s;
  eleven::window_state first({});
  eleven::window_state second({});
  REQUIRE(first.open(s.dir / "license", s.dir / "project.json").ok());
  auto refused = second.open(s.dir / "license", s.dir / "project.json");
  REQUIRE_FALSE(refused.ok());
  CHECK(std::string(refused.message()).find("Another window has the project") == 0);
  CHECK_FALSE(second.is_open());
  REQUIRE(first.open(s.dir / "license", s.dir / "project.json").ok());  // reopening in the same window
  first.close();
  CHECK(second.open(s.dir / "license", s.dir / "project.json").ok());
}
