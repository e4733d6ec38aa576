// Symbol servers: a loopback HTTP server over a symbol-store tree holding a plain PDB, a
// compressed .pd_ (made by gcab) and a file.ptr. Downloads with progress, the cache in store
// layout and no request the second time, a PDB of another build refused, a server that is down
// or hangs, with export symbols still resolving.
#include <fstream>
#include <regex>

#include <absl/strings/str_format.h>
#include <toolhost/symbols/symbol_locator.hpp>

#include "debugger_session.hpp"
#include "kernel_dump.hpp"
#include "oracle.hpp"
#include "store_server.hpp"

namespace w = toolhost::test::windows;
namespace fs = std::filesystem;

namespace {

// The symbol-store key of a fixture PDB: its GUID's hex digits and its age, from llvm-pdbutil.
std::string key_of(const std::string& pdb) {
  const auto s = w::summary(w::fixture(pdb));
  std::string key;
  for (char c : s.guid) {
    if (std::isxdigit(static_cast<unsigned char>(c))) key += c;
  }
  return key + absl::StrFormat("%X", s.age);
}

struct scratch {
  std::string root = w::temp_path("store-" + std::to_string(reinterpret_cast<uintptr_t>(this)));
  scratch() { fs::create_directories(root); }
  ~scratch() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  std::string dir(const std::string& sub) const {
    fs::create_directories(root + "/" + sub);
    return root + "/" + sub;
  }
};

void copy(const std::string& from, const std::string& to) {
  fs::create_directories(fs::path(to).parent_path());
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST_CASE("a symbol server: download with progress, a .pd_, the cache, then no request", "[symbols][server]") {
  toolhost::symbols::forget_server_failures();
  scratch s;
  const std::string store = s.dir("server");
  const std::string fix_key = key_of("wsfix.pdb"), drv_key = key_of("wsdrv.pdb");
  copy(w::fixture("wsfix.pdb"), store + "/wsfix.pdb/" + fix_key + "/wsfix.pdb");
  // wsdrv only compressed, as symstore /compress leaves it.
  const std::string packed_dir = store + "/wsdrv.pdb/" + drv_key;
  fs::create_directories(packed_dir);
  copy(w::fixture("wsdrv.pdb"), s.root + "/wsdrv.pdb");
  REQUIRE(std::system(("cd " + s.root + " && gcab -c -z -n " + packed_dir + "/wsdrv.pd_ wsdrv.pdb").c_str()) == 0);
  w::store_server server(store);
  const std::string cache = s.root + "/cache";

  const std::string dump = w::make_kernel_dump("server.dmp");
  auto tools = w::make_tools({.symbol_path = "srv*" + cache + "*" + server.url()});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  std::vector<std::string> progress;
  auto reload = w::unpack(tools->command(
      ".reload /f", 10000, "text", [] { return false; },
      [&](double done, double total, const std::string& message) {
        progress.push_back(absl::StrFormat("%.0f/%.0f %s", done, total, message));
      }));
  INFO(reload.text);
  REQUIRE_FALSE(reload.error);
  CHECK(std::regex_search(reload.text,
                          std::regex(R"(wsfix      \(pdb symbols\)\s+\S+/wsfix\.pdb/)" + fix_key + R"(/wsfix\.pdb)")));
  CHECK(std::regex_search(reload.text,
                          std::regex(R"(wsdrv      \(pdb symbols\)\s+\S+/wsdrv\.pdb/)" + drv_key + R"(/wsdrv\.pdb)")));
  // What was asked for: the plain file, then for wsdrv the compressed one.
  CHECK(sorted(server.requests()) ==
        sorted({"/wsfix.pdb/" + fix_key + "/wsfix.pdb", "/wsdrv.pdb/" + drv_key + "/wsdrv.pdb",
                "/wsdrv.pdb/" + drv_key + "/wsdrv.pd_"}));
  REQUIRE(!progress.empty());
  CHECK(progress.back().find("Downloading symbols for ") != std::string::npos);
  CHECK(std::any_of(progress.begin(), progress.end(), [&](const std::string& p) {
    return p.find(server.url() + "/wsfix.pdb/" + fix_key + "/wsfix.pdb") != std::string::npos;
  }));
  // The cache is a symbol store: WinDbg's layout and its marker files.
  CHECK(fs::is_regular_file(cache + "/wsfix.pdb/" + fix_key + "/wsfix.pdb"));
  CHECK(fs::is_regular_file(cache + "/wsdrv.pdb/" + drv_key + "/wsdrv.pdb"));
  CHECK(fs::is_regular_file(cache + "/pingme.txt"));
  CHECK(fs::is_directory(cache + "/000admin"));
  CHECK(w::run(*tools, "x wsfix!WsTouch").text.find("wsfix!WsTouch") != std::string::npos);

  // Again: everything from the cache, no request at all.
  server.clear();
  auto again = w::run(*tools, ".reload /f");
  CHECK(again.text.find("wsfix      (pdb symbols)") != std::string::npos);
  CHECK(server.requests().empty());
  std::filesystem::remove(dump);
}

TEST_CASE("a symbol server's file.ptr, and a PDB of another build refused with both identities", "[symbols][server]") {
  toolhost::symbols::forget_server_failures();
  scratch s;
  const std::string store = s.dir("server");
  const std::string fix_key = key_of("wsfix.pdb"), drv_key = key_of("wsdrv.pdb");
  // wsfix: only a file.ptr that points at the file elsewhere on the server.
  fs::create_directories(store + "/wsfix.pdb/" + fix_key);
  std::ofstream(store + "/wsfix.pdb/" + fix_key + "/file.ptr") << "PATH:files\\wsfix.pdb\r\n";
  copy(w::fixture("wsfix.pdb"), store + "/files/wsfix.pdb");
  // wsdrv: the store holds wsfix's PDB under wsdrv's key.
  copy(w::fixture("wsfix.pdb"), store + "/wsdrv.pdb/" + drv_key + "/wsdrv.pdb");
  w::store_server server(store);

  const std::string dump = w::make_kernel_dump("fileptr.dmp");
  auto tools = w::make_tools({.symbol_path = "srv*" + s.root + "/cache*" + server.url()});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  auto reload = w::run(*tools, ".reload /f");
  CHECK(reload.text.find("wsfix      (pdb symbols)") != std::string::npos);
  CHECK(std::find(server.requests().begin(), server.requests().end(), "/files/wsfix.pdb") != server.requests().end());
  // The wrong PDB is not used; the message names what the image wants and what the file is.
  CHECK(reload.text.find("wsdrv      (export symbols)") != std::string::npos);
  const auto want = w::summary(w::fixture("wsdrv.pdb")), got = w::summary(w::fixture("wsfix.pdb"));
  CHECK(reload.text.find("the image wants " + want.guid) != std::string::npos);
  CHECK(reload.text.find("the PDB is " + got.guid) != std::string::npos);
  CHECK(!fs::exists(s.root + "/cache/wsdrv.pdb/" + drv_key + "/wsdrv.pdb"));
  CHECK(w::run(*tools, "x wsdrv!WsDriverCall").text.find("wsdrv!WsDriverCall") != std::string::npos);
  std::filesystem::remove(dump);
}

TEST_CASE("a symbol server that is down or hangs: a clear error within the timeout, exports still resolve",
          "[symbols][server]") {
  toolhost::symbols::forget_server_failures();
  scratch s;
  const std::string dump = w::make_kernel_dump("down.dmp");
  std::string closed_url;
  {
    w::store_server gone(s.dir("gone"));
    closed_url = gone.url();
  }  // the port is closed now

  auto tools = w::make_tools({.symbol_path = "srv*" + s.root + "/cache*" + closed_url, .symbol_timeout_ms = 2000});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  auto down = w::run(*tools, ".reload /f wsfix");
  CHECK(down.text.find("wsfix      (export symbols)") != std::string::npos);
  CHECK(down.text.find("cannot be reached") != std::string::npos);
  CHECK(w::run(*tools, "x wsfix!NtCreateThing").text.find("wsfix!NtCreateThing") != std::string::npos);
  // The next module does not wait for the same server again.
  auto next = w::run(*tools, ".reload /f wsdrv");
  CHECK(next.text.find("could not be reached less than a minute ago") != std::string::npos);

  w::store_server hanging(s.dir("hang"));
  hanging.hang(true);
  auto slow_tools =
      w::make_tools({.symbol_path = "srv*" + s.root + "/cache2*" + hanging.url(), .symbol_timeout_ms = 1000});
  REQUIRE_FALSE(w::unpack(slow_tools->open("dump", dump, "")).error);
  auto slow = w::run(*slow_tools, ".reload /f wsfix");
  CHECK(slow.text.find("did not answer within 1000 ms") != std::string::npos);
  CHECK(slow.text.find("wsfix      (export symbols)") != std::string::npos);
  CHECK(w::run(*slow_tools, "ln wsfix!NtQueryThing").text.find("wsfix!NtQueryThing") != std::string::npos);

  // Without a symbol path at all, the module says so.
  auto bare = w::make_tools({.symbol_path = ""});
  REQUIRE_FALSE(w::unpack(bare->open("dump", dump, "")).error);
  auto none = w::run(*bare, ".reload /f wsfix");
  CHECK(none.text.find("the symbol path is empty") != std::string::npos);
  std::filesystem::remove(dump);
}

TEST_CASE(".sympath, .sympath+, .symfix and a local two-tier store", "[symbols][server]") {
  scratch s;
  const std::string store = s.dir("two-tier");
  std::ofstream(store + "/index2.txt") << "";
  copy(w::fixture("wsfix.pdb"), store + "/ws/wsfix.pdb/" + key_of("wsfix.pdb") + "/wsfix.pdb");
  const std::string dump = w::make_kernel_dump("sympath.dmp");
  auto tools = w::make_tools({.symbol_path = ""});
  REQUIRE_FALSE(w::unpack(tools->open("dump", dump, "")).error);
  CHECK(w::run(*tools, ".sympath").text.find("Symbol search path is: <empty>") != std::string::npos);
  CHECK(w::run(*tools, ".sympath srv*" + store).text.find("Symbol search path is: srv*" + store) != std::string::npos);
  CHECK(w::run(*tools, ".reload /f wsfix").text.find("wsfix      (pdb symbols)") != std::string::npos);
  auto fixed = w::run(*tools, ".symfix+ " + s.root + "/ms");
  CHECK(fixed.text.find("srv*" + store + ";srv*" + s.root + "/ms*https://msdl.microsoft.com/download/symbols") !=
        std::string::npos);
  auto json = w::run(*tools, ".sympath", "json");
  CHECK(json.json()["result"]["elements"].Size() == 2);
  CHECK(w::run(*tools, ".sympath srv*x*http://a*http://b").error);
  std::filesystem::remove(dump);
}
