// The kd backend against kd-sim serving the Windows-shaped test guest (tests/guest/windows): a
// snapshot of the QEMU guest (its RAM and processor 0), served over a wire with 10% loss and 5%
// corruption. The expected values come from the guest's own layout report, never from here.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <toolhost/debug_target.h>
#include <toolhost/sdk/writer.hpp>

#include "sim_process.h"
#include "sim_session.h"

namespace {

using namespace kdtest;

// The value of the first `"key":"0x..."` after `from` in the layout (its keys are unique per object).
uint64_t layout_number(const std::string& layout, const std::string& key, size_t* from = nullptr) {
  const std::string needle = "\"" + key + "\":\"";
  const size_t at = layout.find(needle, from != nullptr ? *from : 0);
  REQUIRE(at != std::string::npos);
  if (from != nullptr) *from = at + needle.size();
  return std::strtoull(layout.c_str() + at + needle.size(), nullptr, 16);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("kd backend: kd-sim serves the Windows-shaped guest's memory and registers on a lossy wire") {
  const std::string dir = "/tmp/toolhost-kd-winguest-" + std::to_string(::getpid());
  REQUIRE(std::system((std::string(WINGUEST_SNAPSHOT) + " " + dir + " > /dev/null").c_str()) == 0);
  const std::string layout = read_text(dir + "/layout.json");
  REQUIRE(!layout.empty());

  {
    kdtest::sim_process sim({"--winguest", dir, "--drop", "0.10", "--corrupt", "0.05", "--seed", seed("11")});
    session s(sim.socket_path(), R"({"ack_timeout_ms":150})");
    const toolhost_dt_stop_t first = s.wait();
    CHECK(first.reason == TOOLHOST_DT_STOP_INTERRUPT);

    // GetVersion answers from the guest's KdVersionBlock; CR3 is System's directory table.
    toolhost::sdk::string_writer described;
    s.t->describe(s.t, described.raw());
    INFO(described.text());
    CHECK(described.text().find("\"kernel_base\":\"" + hex(layout_number(layout, "kernel_base")) + "\"") !=
          std::string::npos);
    CHECK(described.text().find("\"module_list_head\":\"" + hex(layout_number(layout, "ps_loaded_module_list")) +
                                "\"") != std::string::npos);
    CHECK(described.text().find("\"debugger_data_list\":\"" + hex(layout_number(layout, "list_head")) + "\"") !=
          std::string::npos);
    CHECK(s.reg("cr3") == layout_number(layout, "system_dtb"));

    // The kernel image, KUSER_SHARED_DATA's build number, every user process's page (physical).
    CHECK(hex_bytes(s.read(TOOLHOST_DT_VIRTUAL, layout_number(layout, "kernel_base"), 4)) == "4d5a9000");
    const auto build = s.read(TOOLHOST_DT_VIRTUAL, layout_number(layout, "kuser_shared_data") + 0x260, 4);
    REQUIRE(build.size() == 4);
    CHECK((build[0] | build[1] << 8) == static_cast<int>(layout_number(layout, "build")));
    size_t cursor = layout.find("\"processes\"");
    int user_pages = 0;
    for (size_t at; (at = layout.find("\"user_page\"", cursor)) != std::string::npos; ++user_pages) {
      cursor = at;
      layout_number(layout, "va", &cursor);
      const uint64_t pa = layout_number(layout, "pa", &cursor);
      const auto head = s.read(TOOLHOST_DT_PHYSICAL, pa, 13);
      CHECK(std::string(head.begin(), head.end()) == "TOOLHOST-PID-");
    }
    CHECK(user_pages >= 3);

    // The captured processor does not run the guest's code; continuing and breaking in again
    // stops at the kernel's DbgBreakPointWithStatus (an int3) each time.
    s.resume(TOOLHOST_DT_CONTINUE);
    toolhost::sdk::string_writer error;
    REQUIRE(s.t->interrupt(s.t, error.raw()) == TOOLHOST_OK);
    const toolhost_dt_stop_t again = s.wait();
    CHECK(again.reason == TOOLHOST_DT_STOP_INTERRUPT);
    CHECK(again.pc == first.pc);
    CHECK(hex_bytes(s.read(TOOLHOST_DT_VIRTUAL, again.pc, 1)) == "cc");
    s.close();
  }
  std::system(("rm -rf " + dir).c_str());
}
