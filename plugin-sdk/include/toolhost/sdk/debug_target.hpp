// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: writing a debug-target backend (debug_target.h) in C++.
//
//   class my_session final : public toolhost::sdk::debug_target {
//    public:
//     my_session() : debug_target("mine") {}
//     uint64_t capabilities() override { return TOOLHOST_DT_CAP_READ_VIRTUAL; }
//     std::string describe() override { return R"({"arch":"x86_64","registers":[],"hints":{}})"; }
//     absl::StatusOr<size_t> read_memory(toolhost_dt_space_t, uint64_t, absl::Span<uint8_t>) override;
//   };
//   absl::StatusOr<std::unique_ptr<sdk::debug_target>> open(const sdk::open_request& r) { ... }
//   constexpr toolhost_debug_target_factory_t kFactory =
//       sdk::debug_target_factory<&open>({"mine", "What it debugs", "default-connect", "what connect means"});
//   absl::Status init(sdk::plugin& p) { return p.debug_target(kFactory); }
//
// Every function of the C table is a noexcept trampoline: a returned absl::Status crosses as its
// code (sdk/status.hpp) with its message in the error writer, and an exception becomes
// TOOLHOST_ERR_INTERNAL with "<backend> backend: <what>". What a backend does not override it
// cannot do: the default answers TOOLHOST_ERR_UNSUPPORTED with a sentence saying so.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <absl/status/status.h>
#include <absl/status/statusor.h>
#include <absl/types/span.h>

#include <toolhost/debug_target.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/status.hpp>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::sdk {

struct dt_thread {
  int64_t id = 0;
  std::string name;
  bool current = false;
};

struct dt_module {
  std::string name;
  std::string path;
  uint64_t base = 0;
  uint64_t size = 0;
};

// Functions of debug_target.h a table may leave NULL: a session carries them only when it says it
// implements them (debug_target::optional_functions), so that the debugger can tell "cannot" from
// a failed attempt.
enum dt_optional : uint32_t {
  dt_resume_with_signal = 1u << 0,
  dt_pass_signals = 1u << 1,
  dt_read_siginfo = 1u << 2,
};

// One open session. Destroying it is the C `close`: remove the session's breakpoints, let a
// halted target run where the wire allows, close the connection.
class debug_target {
 public:
  // `backend` is the name in messages ("gdb", "kd").
  explicit debug_target(std::string backend) : backend_(std::move(backend)) {}
  virtual ~debug_target() = default;
  debug_target(const debug_target&) = delete;
  debug_target& operator=(const debug_target&) = delete;

  const std::string& backend() const noexcept { return backend_; }

  // The dt_optional functions this session implements (it overrides them); read once, by to_c.
  virtual uint32_t optional_functions() const { return 0; }
  // TOOLHOST_DT_CAP_* of this session.
  virtual uint64_t capabilities() = 0;
  // The describe() JSON object of debug_target.h (arch, os, kind, registers, hints).
  virtual std::string describe() = 0;
  // Reads a prefix of `out` and returns its length. Reading nothing becomes TOOLHOST_ERR_NOT_FOUND.
  virtual absl::StatusOr<size_t> read_memory(toolhost_dt_space_t space, uint64_t address, absl::Span<uint8_t> out) = 0;
  virtual absl::Status write_memory(toolhost_dt_space_t, uint64_t, absl::Span<const uint8_t>) {
    return cannot("write memory");
  }
  // The register buffer in the register map's layout; the trampoline copies what fits.
  virtual absl::StatusOr<std::vector<uint8_t>> read_registers(int64_t) { return cannot("read registers"); }
  virtual absl::Status write_register(int64_t, uint32_t, absl::Span<const uint8_t>) {
    return cannot("write registers");
  }
  virtual absl::Status set_breakpoint(toolhost_dt_breakpoint_type_t, uint64_t, uint32_t) {
    return cannot("set breakpoints");
  }
  virtual absl::Status clear_breakpoint(toolhost_dt_breakpoint_type_t, uint64_t, uint32_t) {
    return cannot("clear breakpoints");
  }
  virtual absl::Status resume(toolhost_dt_resume_t, int64_t) { return cannot("resume the target"); }
  // Resumes and delivers POSIX signal `signal` (the target OS's number) to the thread of the last
  // stop.
  virtual absl::Status resume_with_signal(toolhost_dt_resume_t, int64_t, int32_t) { return cannot("deliver signals"); }
  // The signals the backend hands to the program without reporting them; replaces the last set.
  virtual absl::Status pass_signals(const std::vector<int32_t>&) { return cannot("pass signals by itself"); }
  // The siginfo of the last signal stop, in the target's layout; NotFound when there is none.
  virtual absl::StatusOr<std::string> siginfo() { return cannot("read a siginfo"); }
  // [any-thread]
  virtual absl::Status interrupt() { return cannot("interrupt the target"); }
  // The next stop; DeadlineExceeded (TOOLHOST_ERR_TIMEOUT) while the target still runs.
  virtual absl::StatusOr<toolhost_dt_stop_t> wait_stop(std::chrono::milliseconds) { return cannot("run the target"); }
  virtual bool is_running() { return false; }
  virtual std::vector<dt_thread> threads() { return {}; }
  virtual absl::Status select_thread(int64_t) { return cannot("select threads"); }
  virtual std::vector<dt_module> modules() { return {}; }
  // Target output since the last call, one message per element. [any-thread]
  virtual std::vector<std::string> take_output() { return {}; }
  // A backend-specific operation; `args` is a JSON object. Returns the JSON result.
  virtual absl::StatusOr<std::string> extension(std::string_view operation, const rapidjson::Value&) {
    return absl::UnimplementedError("the " + backend_ + " backend has no operation '" + std::string(operation) + "'");
  }

 protected:
  // "The <backend> backend cannot <what>."
  absl::Status cannot(std::string_view what) const {
    return absl::UnimplementedError("The " + backend_ + " backend cannot " + std::string(what) + ".");
  }

 private:
  std::string backend_;
};

// What `open` receives: the C arguments, never null.
struct open_request {
  std::string connect;       // the user's, or the factory's default_connect
  std::string key;           // "" when none was given
  std::string options_json;  // "" when none was given
  std::chrono::milliseconds timeout{0};
};

using open_fn = absl::StatusOr<std::unique_ptr<debug_target>> (*)(const open_request&);

// The static text of a factory.
struct backend_info {
  const char* name;             // "gdb": the `backend` argument of the debugger's open
  const char* description;      // one line, for the debugger's help
  const char* default_connect;  // may be null
  const char* connect_help;     // what `connect` means, for error messages
};

namespace detail {

inline std::string hex_string(uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof buffer, "0x%llx", static_cast<unsigned long long>(v));
  return buffer;
}

// The C table and the session behind it, in one allocation freed by `close`.
struct dt_session {
  toolhost_debug_target_t table{};
  std::unique_ptr<debug_target> impl;
};

inline debug_target& self(toolhost_debug_target_t* t) { return *static_cast<dt_session*>(t->impl)->impl; }

// Runs `fn` (which returns a toolhost_status_t); an exception becomes TOOLHOST_ERR_INTERNAL.
template <class F>
toolhost_status_t guarded(toolhost_debug_target_t* t, toolhost_writer_t* error, F&& fn) noexcept {
  try {
    return fn(self(t));
  } catch (const std::exception& e) {
    write(error, self(t).backend() + " backend: " + e.what());
  } catch (...) {
    write(error, self(t).backend() + " backend: an unknown exception");
  }
  return TOOLHOST_ERR_INTERNAL;
}

// Runs `fn` (which writes output); an exception writes `fallback` instead.
template <class F>
void guarded_output(toolhost_debug_target_t* t, toolhost_writer_t* out, std::string_view fallback, F&& fn) noexcept {
  try {
    write(out, fn(self(t)));
  } catch (...) {
    write(out, fallback);
  }
}

inline bool known_space(toolhost_dt_space_t space) {
  return space == TOOLHOST_DT_VIRTUAL || space == TOOLHOST_DT_PHYSICAL;
}

inline absl::Status unknown_space(toolhost_dt_space_t space) {
  return absl::InvalidArgumentError("Unknown address space " + std::to_string(space) + ".");
}

inline uint64_t dt_capabilities(toolhost_debug_target_t* t) noexcept {
  try {
    return self(t).capabilities();
  } catch (...) {
    return 0;
  }
}

inline void dt_close(toolhost_debug_target_t* t) noexcept {
  auto* s = static_cast<dt_session*>(t->impl);
  try {
    s->impl.reset();
  } catch (...) {
  }
  delete s;
}

inline void dt_describe(toolhost_debug_target_t* t, toolhost_writer_t* out) noexcept {
  guarded_output(t, out, "{}", [](debug_target& d) { return d.describe(); });
}

inline toolhost_status_t dt_read_memory(toolhost_debug_target_t* t, toolhost_dt_space_t space, uint64_t address,
                                        void* buffer, size_t size, size_t* done, toolhost_writer_t* error) noexcept {
  *done = 0;
  return guarded(t, error, [&](debug_target& d) {
    if (!known_space(space)) return fail(error, unknown_space(space));
    auto n = d.read_memory(space, address, absl::Span<uint8_t>(static_cast<uint8_t*>(buffer), size));
    if (!n.ok()) return fail(error, n.status());
    *done = std::min(*n, size);
    if (*done == 0 && size > 0) {
      return fail(error, absl::NotFoundError(std::string("Nothing is readable at ") +
                                             (space == TOOLHOST_DT_VIRTUAL ? "virtual" : "physical") + " address " +
                                             hex_string(address) + "."));
    }
    return TOOLHOST_OK;
  });
}

inline toolhost_status_t dt_write_memory(toolhost_debug_target_t* t, toolhost_dt_space_t space, uint64_t address,
                                         const void* data, size_t size, toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) {
    if (!known_space(space)) return fail(error, unknown_space(space));
    return fail(error,
                d.write_memory(space, address, absl::Span<const uint8_t>(static_cast<const uint8_t*>(data), size)));
  });
}

inline toolhost_status_t dt_read_registers(toolhost_debug_target_t* t, int64_t thread, void* buffer, size_t size,
                                           size_t* done, toolhost_writer_t* error) noexcept {
  *done = 0;
  return guarded(t, error, [&](debug_target& d) {
    auto regs = d.read_registers(thread);
    if (!regs.ok()) return fail(error, regs.status());
    *done = std::min(size, regs->size());
    if (*done != 0) std::memcpy(buffer, regs->data(), *done);
    return TOOLHOST_OK;
  });
}

inline toolhost_status_t dt_write_register(toolhost_debug_target_t* t, int64_t thread, uint32_t index,
                                           const void* value, size_t size, toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) {
    return fail(error,
                d.write_register(thread, index, absl::Span<const uint8_t>(static_cast<const uint8_t*>(value), size)));
  });
}

inline toolhost_status_t dt_set_breakpoint(toolhost_debug_target_t* t, toolhost_dt_breakpoint_type_t type,
                                           uint64_t address, uint32_t length, toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) { return fail(error, d.set_breakpoint(type, address, length)); });
}

inline toolhost_status_t dt_clear_breakpoint(toolhost_debug_target_t* t, toolhost_dt_breakpoint_type_t type,
                                             uint64_t address, uint32_t length, toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) { return fail(error, d.clear_breakpoint(type, address, length)); });
}

inline toolhost_status_t dt_resume(toolhost_debug_target_t* t, toolhost_dt_resume_t how, int64_t thread,
                                   toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) { return fail(error, d.resume(how, thread)); });
}

inline toolhost_status_t dt_resume_with_signal(toolhost_debug_target_t* t, toolhost_dt_resume_t how, int64_t thread,
                                               int32_t signal, toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) { return fail(error, d.resume_with_signal(how, thread, signal)); });
}

inline toolhost_status_t dt_pass_signals(toolhost_debug_target_t* t, const int32_t* signals, size_t count,
                                         toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) {
    return fail(error, d.pass_signals(std::vector<int32_t>(signals, signals + (signals != nullptr ? count : 0))));
  });
}

inline toolhost_status_t dt_read_siginfo(toolhost_debug_target_t* t, void* buffer, size_t size, size_t* done,
                                         toolhost_writer_t* error) noexcept {
  *done = 0;
  return guarded(t, error, [&](debug_target& d) {
    auto info = d.siginfo();
    if (!info.ok()) return fail(error, info.status());
    *done = std::min(size, info->size());
    if (*done != 0) std::memcpy(buffer, info->data(), *done);
    return TOOLHOST_OK;
  });
}

inline toolhost_status_t dt_interrupt(toolhost_debug_target_t* t, toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) { return fail(error, d.interrupt()); });
}

// Writes `stop` into the caller's struct as far as both know it (the growth rule of plugin.h).
inline toolhost_status_t copy_stop(const toolhost_dt_stop_t& stop, toolhost_dt_stop_t* into, toolhost_writer_t* error) {
  constexpr uint32_t kMinimum = offsetof(toolhost_dt_stop_t, reason) + sizeof(toolhost_dt_stop_reason_t);
  constexpr uint32_t kLayout10 = offsetof(toolhost_dt_stop_t, description) + 256;
  if (into->struct_size == 0) into->struct_size = kLayout10;  // a caller that did not say: 1.0's layout
  if (into->struct_size < kMinimum) {
    return fail(error, absl::InvalidArgumentError("wait_stop needs stop->struct_size set to the sizeof the caller's "
                                                  "toolhost_dt_stop_t; it is " +
                                                  std::to_string(into->struct_size)));
  }
  const uint32_t size = into->struct_size < sizeof stop ? into->struct_size : static_cast<uint32_t>(sizeof stop);
  std::memcpy(into, &stop, size);
  if (size >= offsetof(toolhost_dt_stop_t, description) + 1) {
    const size_t room = size - offsetof(toolhost_dt_stop_t, description);
    into->description[room - 1] = '\0';  // a shorter description field still ends in NUL
  }
  into->struct_size = size;
  return TOOLHOST_OK;
}

inline toolhost_status_t dt_wait_stop(toolhost_debug_target_t* t, uint32_t timeout_ms, toolhost_dt_stop_t* stop,
                                      toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) {
    auto got = d.wait_stop(std::chrono::milliseconds(timeout_ms));
    if (!got.ok()) return fail(error, got.status());
    got->struct_size = sizeof(toolhost_dt_stop_t);
    return copy_stop(*got, stop, error);
  });
}

inline bool dt_is_running(toolhost_debug_target_t* t) noexcept {
  try {
    return self(t).is_running();
  } catch (...) {
    return false;
  }
}

inline void dt_list_threads(toolhost_debug_target_t* t, toolhost_writer_t* out) noexcept {
  guarded_output(t, out, "[]", [](debug_target& d) {
    std::string json = "[";
    for (const dt_thread& th : d.threads()) {
      if (json.size() > 1) json += ',';
      json += R"({"id":)" + std::to_string(th.id) + R"(,"name":)" + quote(th.name) + R"(,"current":)" +
              (th.current ? "true" : "false") + "}";
    }
    return json + "]";
  });
}

inline toolhost_status_t dt_select_thread(toolhost_debug_target_t* t, int64_t thread,
                                          toolhost_writer_t* error) noexcept {
  return guarded(t, error, [&](debug_target& d) { return fail(error, d.select_thread(thread)); });
}

inline void dt_list_modules(toolhost_debug_target_t* t, toolhost_writer_t* out) noexcept {
  guarded_output(t, out, "[]", [](debug_target& d) {
    std::string json = "[";
    for (const dt_module& m : d.modules()) {
      if (json.size() > 1) json += ',';
      json += R"({"name":)" + quote(m.name) + R"(,"path":)" + quote(m.path) + R"(,"base":")" + hex_string(m.base) +
              R"(","size":")" + hex_string(m.size) + "\"}";
    }
    return json + "]";
  });
}

inline void dt_read_output(toolhost_debug_target_t* t, toolhost_writer_t* out) noexcept {
  guarded_output(t, out, "", [](debug_target& d) {
    std::string text;
    for (std::string& line : d.take_output()) {
      if (line.empty()) continue;
      text += line;
      if (text.back() != '\n') text += '\n';
    }
    return text;
  });
}

inline toolhost_status_t dt_extension(toolhost_debug_target_t* t, const char* operation, const char* args_json,
                                      toolhost_writer_t* out) noexcept {
  return guarded(t, out, [&](debug_target& d) {
    std::string problem;
    auto args = parse_json(args_json != nullptr && *args_json != '\0' ? args_json : "{}", &problem);
    if (!args || !args->IsObject()) {
      return fail(out, absl::InvalidArgumentError("The arguments must be a JSON object" +
                                                  (problem.empty() ? std::string(".") : ": " + problem)));
    }
    auto result = d.extension(operation != nullptr ? operation : "", *args);
    if (!result.ok()) return fail(out, result.status());
    write(out, *result);
    return TOOLHOST_OK;
  });
}

template <open_fn Open>
toolhost_debug_target_t* dt_open(const toolhost_debug_target_factory_t* factory, const char* connect, const char* key,
                                 const char* options_json, uint32_t timeout_ms, toolhost_writer_t* error) noexcept;

}  // namespace detail

// Hands `session` to C: the table the debugger calls, freed (with the session) by its `close`.
inline toolhost_debug_target_t* to_c(std::unique_ptr<debug_target> session) {
  auto* s = new detail::dt_session();
  s->impl = std::move(session);
  toolhost_debug_target_t& t = s->table;
  t.struct_size = sizeof t;
  t.impl = s;
  t.capabilities = detail::dt_capabilities;
  t.close = detail::dt_close;
  t.describe = detail::dt_describe;
  t.read_memory = detail::dt_read_memory;
  t.write_memory = detail::dt_write_memory;
  t.read_registers = detail::dt_read_registers;
  t.write_register = detail::dt_write_register;
  t.set_breakpoint = detail::dt_set_breakpoint;
  t.clear_breakpoint = detail::dt_clear_breakpoint;
  t.resume = detail::dt_resume;
  t.interrupt = detail::dt_interrupt;
  t.wait_stop = detail::dt_wait_stop;
  t.is_running = detail::dt_is_running;
  t.list_threads = detail::dt_list_threads;
  t.select_thread = detail::dt_select_thread;
  t.list_modules = detail::dt_list_modules;
  t.read_output = detail::dt_read_output;
  t.extension = detail::dt_extension;
  const uint32_t optional = s->impl->optional_functions();
  if ((optional & dt_resume_with_signal) != 0) t.resume_with_signal = detail::dt_resume_with_signal;
  if ((optional & dt_pass_signals) != 0) t.pass_signals = detail::dt_pass_signals;
  if ((optional & dt_read_siginfo) != 0) t.read_siginfo = detail::dt_read_siginfo;
  return &t;
}

// The session behind a table made by to_c, or nullptr for a table of another kind (for tests).
inline debug_target* from_c(toolhost_debug_target_t* t) noexcept {
  if (t == nullptr || t->close != &detail::dt_close) return nullptr;
  return &detail::self(t);
}

// A factory whose `open` runs `Open`: declare it `constexpr` and register it with
// plugin::debug_target.
template <open_fn Open>
constexpr toolhost_debug_target_factory_t debug_target_factory(const backend_info& info) {
  toolhost_debug_target_factory_t f{};
  f.struct_size = sizeof f;
  f.version = TOOLHOST_DEBUG_TARGET_MAJOR;
  f.name = info.name;
  f.description = info.description;
  f.default_connect = info.default_connect;
  f.connect_help = info.connect_help;
  f.open = &detail::dt_open<Open>;
  f.minor = TOOLHOST_DEBUG_TARGET_MINOR;
  return f;
}

template <open_fn Open>
toolhost_debug_target_t* detail::dt_open(const toolhost_debug_target_factory_t* factory, const char* connect,
                                         const char* key, const char* options_json, uint32_t timeout_ms,
                                         toolhost_writer_t* error) noexcept {
  const std::string name = factory != nullptr && factory->name != nullptr ? factory->name : "debug-target";
  try {
    open_request request{connect != nullptr ? connect : "", key != nullptr ? key : "",
                         options_json != nullptr ? options_json : "", std::chrono::milliseconds(timeout_ms)};
    auto session = Open(request);
    if (!session.ok()) {
      fail(error, session.status());
      return nullptr;
    }
    if (*session == nullptr) {
      write(error, "the " + name + " backend opened no session");
      return nullptr;
    }
    return to_c(std::move(*session));
  } catch (const std::exception& e) {
    write(error, "the " + name + " backend could not open " + (connect != nullptr ? connect : "") + ": " + e.what());
  } catch (...) {
    write(error,
          "the " + name + " backend could not open " + (connect != nullptr ? connect : "") + " (an unknown exception)");
  }
  return nullptr;
}

}  // namespace toolhost::sdk
