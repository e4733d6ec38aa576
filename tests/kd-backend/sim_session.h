// The kd backend's session as the debugger plugin drives it through debug_target.h, for tests
// against tests/kd-sim: open, registers by name, memory, run control, extensions, output.
#pragma once

#include <catch2/catch.hpp>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <toolhost/debug_target.h>
#include <toolhost/sdk/writer.hpp>

#include "kdcom_factory.h"

namespace kdtest {

constexpr uint64_t kKernelBase = 0xFFFFF80000000000ull;
constexpr uint64_t kSayHello = kKernelBase + 0x1100;         // the simulator's DbgPrint caller
constexpr uint64_t kBreakWithStatus = kKernelBase + 0x1300;  // its DbgBreakPointWithStatus: int3; ret

// KD_TEST_SEED picks another fault pattern for the lossy runs (to reproduce or to stress).
inline std::string seed(const char* fallback) {
  const char* env = std::getenv("KD_TEST_SEED");
  return env != nullptr && *env != '\0' ? env : fallback;
}

inline std::string hex(uint64_t v) {
  char b[32];
  std::snprintf(b, sizeof(b), "0x%" PRIx64, v);
  return b;
}

inline std::string hex_bytes(const std::vector<uint8_t>& v) {
  std::string s;
  char b[3];
  for (uint8_t x : v) {
    std::snprintf(b, sizeof(b), "%02x", x);
    s += b;
  }
  return s;
}

struct session {
  toolhost_debug_target_t* t = nullptr;
  explicit session(const std::string& connect, const char* options = nullptr, uint32_t timeout_ms = 15000) {
    toolhost::sdk::string_writer error;
    t = toolhost::kd_backend::kdcom_factory().open(&toolhost::kd_backend::kdcom_factory(), connect.c_str(), nullptr,
                                                   options, timeout_ms, error.raw());
    INFO(error.text());
    REQUIRE(t != nullptr);
  }
  ~session() {
    if (t != nullptr) t->close(t);
  }
  void close() {
    t->close(t);
    t = nullptr;
  }

  // Register index by name from describe().
  int reg_index(const std::string& name) {
    toolhost::sdk::string_writer out;
    t->describe(t, out.raw());
    const std::string& d = out.text();
    size_t at = 0;
    int index = 0;
    while ((at = d.find("{\"name\":\"", at)) != std::string::npos) {
      at += 9;
      if (d.compare(at, name.size() + 1, name + "\"") == 0) return index;
      ++index;
    }
    return -1;
  }
  uint64_t reg(const std::string& name, int64_t thread = -1) {
    const int i = reg_index(name);
    REQUIRE(i >= 0);
    std::vector<uint8_t> buf(512);
    size_t done = 0;
    toolhost::sdk::string_writer error;
    REQUIRE(t->read_registers(t, thread, buf.data(), buf.size(), &done, error.raw()) == TOOLHOST_OK);
    uint64_t v = 0;
    std::memcpy(&v, buf.data() + i * 8, 8);
    return v;
  }
  std::vector<uint8_t> read(toolhost_dt_space_t space, uint64_t address, size_t size,
                            toolhost_status_t* status = nullptr) {
    std::vector<uint8_t> buf(size);
    size_t done = 0;
    toolhost::sdk::string_writer error;
    const toolhost_status_t s = t->read_memory(t, space, address, buf.data(), size, &done, error.raw());
    if (status != nullptr) *status = s;
    buf.resize(done);
    return buf;
  }
  toolhost_dt_stop_t wait(uint32_t ms = 10000) {
    toolhost_dt_stop_t stop{};
    toolhost::sdk::string_writer error;
    const toolhost_status_t s = t->wait_stop(t, ms, &stop, error.raw());
    INFO(error.text());
    REQUIRE(s == TOOLHOST_OK);
    return stop;
  }
  void resume(toolhost_dt_resume_t how) {
    toolhost::sdk::string_writer error;
    const toolhost_status_t s = t->resume(t, how, -1, error.raw());
    INFO(error.text());
    REQUIRE(s == TOOLHOST_OK);
  }
  std::string ext(const char* op, const char* args) {
    toolhost::sdk::string_writer out;
    const toolhost_status_t s = t->extension(t, op, args, out.raw());
    INFO(out.text());
    REQUIRE(s == TOOLHOST_OK);
    return out.text();
  }
  std::string output() {
    toolhost::sdk::string_writer out;
    t->read_output(t, out.raw());
    return out.text();
  }
};

}  // namespace kdtest
