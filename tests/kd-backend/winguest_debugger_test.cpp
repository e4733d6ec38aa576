// The debugger's Windows kernel model over KD (issue 19), on kd-sim serving a snapshot of the
// Windows-shaped QEMU guest (tests/guest/windows) through a wire that drops 10% and corrupts 5%
// of what the target sends. What the answers must show comes from the guest's own layout
// report; the round trips each command costs come from the simulator's request counter.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <absl/strings/str_format.h>
#include <toolhost/sdk/json.hpp>

#include "kdcom_factory.h"
#include "sim_process.h"
#include "tools.hpp"

using toolhost::debugger::debugger_tools;

namespace {

struct answer {
  std::string text;
  bool error = false;
};

answer run(debugger_tools& tools, const std::string& line) {
  auto doc = toolhost::sdk::parse_json(tools.command(line, 60000, "text", [] { return false; }).to_json());
  answer a;
  REQUIRE(doc);
  for (const auto& block : (*doc)["content"].GetArray()) a.text += block["text"].GetString();
  a.error = (*doc).HasMember("isError") && (*doc)["isError"].GetBool();
  UNSCOPED_INFO("> " << line << "\n" << a.text);
  return a;
}

uint64_t number(const rapidjson::Value& v) { return std::strtoull(v.GetString(), nullptr, 16); }

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// kd-sim's `requests`: "total=N Name=N ...".
uint64_t total_requests(kdtest::sim_process& sim) {
  const std::string counts = sim.control("requests");
  const size_t at = counts.find("total=");
  REQUIRE(at != std::string::npos);
  return std::strtoull(counts.c_str() + at + 6, nullptr, 10);
}

std::string trailer(const answer& a) {
  const size_t at = a.text.rfind("[target");
  return at == std::string::npos ? std::string() : a.text.substr(at);
}

}  // namespace

TEST_CASE("kd: the Windows kernel model on the Windows-shaped guest, over a lossy wire", "[kd][windows]") {
  const std::string dir = "/tmp/toolhost-kd-winguest-dbg-" + std::to_string(::getpid());
  REQUIRE(std::system((std::string(WINGUEST_DIR) + "/winguest-snapshot " + dir + " > /dev/null").c_str()) == 0);
  rapidjson::Document layout;
  layout.Parse(read_text(dir + "/layout.json").c_str());
  REQUIRE(layout.IsObject());
  const auto& processes = layout["processes"].GetArray();
  REQUIRE(processes.Size() >= 3);

  kdtest::sim_process sim({"--winguest", dir, "--drop", "0.10", "--corrupt", "0.05", "--seed", "19"});
  toolhost::debugger::launch_settings launch;
  launch.symbol_path = WINGUEST_DIR;
  debugger_tools tools(
      [](const std::string& name) { return name == "kd" ? &toolhost::kd_backend::kdcom_factory() : nullptr; }, launch);
  auto doc = toolhost::sdk::parse_json(tools.open("kd", sim.socket_path(), "").to_json());
  REQUIRE(doc);
  INFO(toolhost::sdk::to_json(*doc));

  // Discovery from GetVersion and the special registers: the kernel base in vertarget.
  auto version = run(tools, "vertarget");
  CHECK(version.text.find(absl::StrFormat("Kernel base = 0x%08x`%08x", number(layout["kernel_base"]) >> 32,
                                          number(layout["kernel_base"]) & 0xffffffff)) != std::string::npos);

  // !process 0 0: every process, each with its EPROCESS, Cid, ParentCid, DirBase and Image, and
  // a fixed small number of KD requests per process listed.
  sim.control("requests reset");
  auto all = run(tools, "!process 0 0");
  const uint64_t requests = total_requests(sim);
  REQUIRE_FALSE(all.error);
  for (const auto& p : processes) {
    const std::string name = p["name"].GetString();
    INFO(name);
    CHECK(all.text.find(absl::StrFormat("PROCESS %016x", number(p["eprocess"]))) != std::string::npos);
    CHECK(std::regex_search(
        all.text, std::regex(absl::StrFormat("Cid: %04x .*ParentCid: %04x", number(p["pid"]), number(p["parent"])))));
    CHECK(all.text.find(absl::StrFormat("DirBase: %08x", number(p["dtb"]))) != std::string::npos);
    CHECK(all.text.find("Image: " + name) != std::string::npos);
  }
  UNSCOPED_INFO("KD requests for !process 0 0: " << requests << " for " << processes.Size() << " processes ("
                                                 << sim.control("requests") << ")");
  CHECK(requests <= 2 * processes.Size() + 4);

  const auto& csrss = processes[2];
  const std::string csrss_name = csrss["name"].GetString();
  auto one = run(tools, "!process 0 0 " + csrss_name);
  CHECK(one.text.find("Image: " + csrss_name) != std::string::npos);
  CHECK(one.text.find(std::string("Image: ") + processes[1]["name"].GetString()) == std::string::npos);

  // .process /p: db of the user page shows that process's bytes (byte k after the 16-byte tag
  // is (k*mul+add) & 0xff for its offset k), the trailer names the scope, .process 0 resets it.
  for (const auto& p : processes) {
    if (!p.HasMember("user_page")) continue;
    const auto& page = p["user_page"];
    const uint64_t pid = number(p["pid"]);
    auto set = run(tools, absl::StrFormat(".process /p %x", pid));
    REQUIRE_FALSE(set.error);
    CHECK(trailer(set).find(absl::StrFormat(" | scope %s (%d)]", p["name"].GetString(), pid)) != std::string::npos);
    auto db = run(tools, absl::StrFormat("db %x L4", number(page["va"]) + 16));
    std::string bytes;
    for (uint64_t k = 0; k < 4; ++k) {
      bytes += absl::StrFormat("%s%02x", k ? " " : "", ((16 + k) * number(page["mul"]) + number(page["add"])) & 0xff);
    }
    CHECK(db.text.find(bytes) != std::string::npos);
  }
  auto reset = run(tools, ".process 0");
  CHECK(trailer(reset).find("| scope") == std::string::npos);

  // lm: the guest's kernel modules with their PDBs; dt of an EPROCESS; !thread of each thread.
  REQUIRE_FALSE(run(tools, ".reload /f").error);  // loads the deferred modules' PDBs, as in WinDbg
  auto lm = run(tools, "lm");
  for (const auto& m : layout["modules"].GetArray()) {
    std::string stem = m["name"].GetString();
    stem = stem == "ntoskrnl.exe" ? "nt" : stem.substr(0, stem.find('.'));
    CHECK(std::regex_search(
        lm.text, std::regex(absl::StrFormat(R"(%08x`%08x\s+\S+\s+%s\s+\(pdb symbols\))", number(m["base"]) >> 32,
                                            number(m["base"]) & 0xffffffff, stem))));
  }
  auto dt = run(tools, absl::StrFormat("dt nt!_EPROCESS %x ImageFileName", number(csrss["eprocess"])));
  CHECK(dt.text.find("\"" + csrss_name + "\"") != std::string::npos);
  for (const auto& p : processes) {
    for (const auto& t : p["threads"].GetArray()) {
      auto th = run(tools, absl::StrFormat("!thread %x", number(t["ethread"])));
      CHECK(th.text.find(absl::StrFormat("THREAD %016x  Cid %04x.%04x", number(t["ethread"]), number(p["pid"]),
                                         number(t["tid"]))) != std::string::npos);
      CHECK(th.text.find(absl::StrFormat("Owning Process            %016x       Image:         %s",
                                         number(p["eprocess"]), p["name"].GetString())) != std::string::npos);
    }
  }
  tools.close();
  std::system(("rm -rf " + dir).c_str());
}

TEST_CASE("kd: the encoded KDBG of the Windows-shaped guest is decoded", "[kd][windows]") {
  const std::string dir = "/tmp/toolhost-kd-winguest-enc-" + std::to_string(::getpid());
  REQUIRE(std::system((std::string(WINGUEST_DIR) + "/winguest-snapshot " + dir + " -- -append kdbg=encoded > /dev/null")
                          .c_str()) == 0);
  rapidjson::Document layout;
  layout.Parse(read_text(dir + "/layout.json").c_str());
  REQUIRE(layout.IsObject());
  REQUIRE(layout["kdbg"]["encoded"].GetBool());

  kdtest::sim_process sim({"--winguest", dir});
  toolhost::debugger::launch_settings launch;
  launch.symbol_path = WINGUEST_DIR;
  debugger_tools tools(
      [](const std::string& name) { return name == "kd" ? &toolhost::kd_backend::kdcom_factory() : nullptr; }, launch);
  REQUIRE_FALSE(tools.open("kd", sim.socket_path(), "").is_error());
  auto version = run(tools, "vertarget");
  const uint64_t kdbg = number(layout["kdbg"]["address"]);
  CHECK(version.text.find(absl::StrFormat("KDBG at %08x`%08x (encoded; decoded with KiWaitNever, KiWaitAlways and "
                                          "KdpDataBlockEncoded)",
                                          kdbg >> 32, kdbg & 0xffffffff)) != std::string::npos);
  auto all = run(tools, "!process 0 0");
  for (const auto& p : layout["processes"].GetArray()) {
    CHECK(all.text.find(absl::StrFormat("PROCESS %016x", number(p["eprocess"]))) != std::string::npos);
  }
  tools.close();
  std::system(("rm -rf " + dir).c_str());
}
