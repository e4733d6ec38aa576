#include "target_adapter.hpp"

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

#include "gdb_session.hpp"

namespace toolhost::gdb {

namespace {

using sdk::write;

struct adapter {
  toolhost_debug_target_t table{};
  std::unique_ptr<session> s;
};

session& of(toolhost_debug_target_t* t) { return *static_cast<adapter*>(t->impl)->s; }

toolhost_status_t fail(const absl::Status& status, toolhost_writer_t* error) {
  write(error, std::string(status.message()));
  switch (status.code()) {
    case absl::StatusCode::kUnimplemented: return TOOLHOST_ERR_UNSUPPORTED;
    case absl::StatusCode::kNotFound: return TOOLHOST_ERR_NOT_FOUND;
    case absl::StatusCode::kInvalidArgument: return TOOLHOST_ERR_INVALID_ARGUMENT;
    case absl::StatusCode::kDeadlineExceeded: return TOOLHOST_ERR_TIMEOUT;
    case absl::StatusCode::kFailedPrecondition: return TOOLHOST_ERR_WRONG_STATE;
    default: return TOOLHOST_ERR_INTERNAL;
  }
}

template <class F>
toolhost_status_t guarded(toolhost_writer_t* error, F&& fn) noexcept {
  try {
    return fn();
  } catch (const std::exception& e) {
    write(error, std::string("gdb backend: ") + e.what());
  } catch (...) {
    write(error, "gdb backend: unknown exception");
  }
  return TOOLHOST_ERR_INTERNAL;
}

uint64_t caps(toolhost_debug_target_t* t) { return of(t).capabilities(); }

void close_session(toolhost_debug_target_t* t) {
  auto* a = static_cast<adapter*>(t->impl);
  try {
    a->s->shutdown();
  } catch (...) {
  }
  delete a;
}

void describe(toolhost_debug_target_t* t, toolhost_writer_t* out) {
  try {
    write(out, of(t).describe_json());
  } catch (...) {
    write(out, "{}");
  }
}

toolhost_status_t read_memory(toolhost_debug_target_t* t, toolhost_dt_space_t space, uint64_t address,
                              void* buffer, size_t size, size_t* done, toolhost_writer_t* error) {
  return guarded(error, [&] {
    *done = 0;
    auto n = of(t).read_memory(space, address, buffer, size);
    if (!n.ok()) return fail(n.status(), error);
    *done = *n;
    if (*n == 0 && size > 0) {
      char hex[32];
      std::snprintf(hex, sizeof(hex), "0x%llx", static_cast<unsigned long long>(address));
      return fail(absl::NotFoundError(std::string("memory at ") + hex + " is not readable"), error);
    }
    return TOOLHOST_OK;
  });
}

toolhost_status_t write_memory(toolhost_debug_target_t* t, toolhost_dt_space_t space, uint64_t address,
                               const void* data, size_t size, toolhost_writer_t* error) {
  return guarded(error, [&] {
    auto s = of(t).write_memory(space, address, data, size);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  });
}

toolhost_status_t read_registers(toolhost_debug_target_t* t, int64_t thread, void* buffer, size_t size,
                                 size_t* done, toolhost_writer_t* error) {
  return guarded(error, [&] {
    *done = 0;
    auto regs = of(t).read_registers(thread);
    if (!regs.ok()) return fail(regs.status(), error);
    *done = std::min(size, regs->size());
    std::memcpy(buffer, regs->data(), *done);
    return TOOLHOST_OK;
  });
}

toolhost_status_t write_register(toolhost_debug_target_t* t, int64_t thread, uint32_t index, const void* value,
                                 size_t size, toolhost_writer_t* error) {
  return guarded(error, [&] {
    auto s = of(t).write_register(thread, index, value, size);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  });
}

toolhost_status_t set_bp(toolhost_debug_target_t* t, toolhost_dt_breakpoint_type_t type, uint64_t address,
                         uint32_t length, toolhost_writer_t* error) {
  return guarded(error, [&] {
    auto s = of(t).set_breakpoint(type, address, length);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  });
}

toolhost_status_t clear_bp(toolhost_debug_target_t* t, toolhost_dt_breakpoint_type_t type, uint64_t address,
                           uint32_t length, toolhost_writer_t* error) {
  return guarded(error, [&] {
    auto s = of(t).clear_breakpoint(type, address, length);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  });
}

toolhost_status_t resume(toolhost_debug_target_t* t, toolhost_dt_resume_t how, int64_t thread,
                         toolhost_writer_t* error) {
  return guarded(error, [&] {
    auto s = of(t).resume(how, thread);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  });
}

toolhost_status_t resume_with_signal(toolhost_debug_target_t* t, toolhost_dt_resume_t how, int64_t thread,
                                     int32_t signal, toolhost_writer_t* error) {
  return guarded(error, [&] {
    auto s = of(t).resume(how, thread, signal);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  });
}

toolhost_status_t pass_signals(toolhost_debug_target_t* t, const int32_t* signals, size_t count,
                               toolhost_writer_t* error) {
  return guarded(error, [&] {
    auto s = of(t).pass_signals(std::vector<int>(signals, signals + count));
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  });
}

toolhost_status_t read_siginfo(toolhost_debug_target_t* t, void* buffer, size_t size, size_t* done,
                               toolhost_writer_t* error) {
  return guarded(error, [&] {
    *done = 0;
    auto info = of(t).siginfo();
    if (!info.ok()) return fail(info.status(), error);
    *done = std::min(size, info->size());
    std::memcpy(buffer, info->data(), *done);
    return TOOLHOST_OK;
  });
}

toolhost_status_t interrupt(toolhost_debug_target_t* t, toolhost_writer_t* error) {
  return guarded(error, [&] {
    auto s = of(t).interrupt();
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  });
}

toolhost_status_t wait_stop(toolhost_debug_target_t* t, uint32_t timeout_ms, toolhost_dt_stop_t* stop,
                            toolhost_writer_t* error) {
  return guarded(error, [&] {
    toolhost_dt_stop_t got{};
    auto s = of(t).wait_stop(std::chrono::milliseconds(timeout_ms), got);
    if (!s.ok()) return fail(s, error);
    const uint32_t size = stop->struct_size != 0 ? std::min<uint32_t>(stop->struct_size, sizeof(got)) : sizeof(got);
    got.struct_size = size;
    std::memcpy(stop, &got, size);
    return TOOLHOST_OK;
  });
}

bool is_running(toolhost_debug_target_t* t) { return of(t).is_running(); }

void list_threads(toolhost_debug_target_t* t, toolhost_writer_t* out) {
  try {
    auto list = of(t).threads();
    if (!list.ok()) {
      write(out, "[]");
      return;
    }
    std::string json = "[";
    for (const auto& th : *list) {
      if (json.size() > 1) json += ',';
      json += R"({"id":)" + std::to_string(th.id) + R"(,"name":)" + sdk::quote(th.name) + R"(,"current":)" +
              (th.id == of(t).current_thread() ? "true" : "false") + "}";
    }
    write(out, json + "]");
  } catch (...) {
    write(out, "[]");
  }
}

toolhost_status_t select_thread(toolhost_debug_target_t* t, int64_t thread, toolhost_writer_t* error) {
  return guarded(error, [&] {
    auto s = of(t).select_thread(thread);
    return s.ok() ? TOOLHOST_OK : fail(s, error);
  });
}

std::string hex(uint64_t v) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%llx", static_cast<unsigned long long>(v));
  return buffer;
}

void list_modules(toolhost_debug_target_t* t, toolhost_writer_t* out) {
  try {
    auto list = of(t).modules();
    if (!list.ok()) {
      write(out, "[]");
      return;
    }
    std::string json = "[";
    for (const auto& m : *list) {
      if (json.size() > 1) json += ',';
      json += R"({"name":)" + sdk::quote(m.name) + R"(,"path":)" + sdk::quote(m.path) + R"(,"base":")" +
              hex(m.base) + R"(","size":")" + hex(m.size) + "\"}";
    }
    write(out, json + "]");
  } catch (...) {
    write(out, "[]");
  }
}

void read_output(toolhost_debug_target_t* t, toolhost_writer_t* out) {
  try {
    std::string text = of(t).take_output();
    if (!text.empty() && text.back() != '\n') text += '\n';
    write(out, text);
  } catch (...) {
  }
}

toolhost_status_t extension(toolhost_debug_target_t*, const char* operation, const char*, toolhost_writer_t* out) {
  write(out, std::string("the gdb backend has no operation '") + (operation ? operation : "") + "'");
  return TOOLHOST_ERR_UNSUPPORTED;
}

toolhost_debug_target_t* open(const toolhost_debug_target_factory_t*, const char* connect, const char*,
                              const char*, uint32_t timeout_ms, toolhost_writer_t* error) noexcept {
  try {
    auto s = session::open(connect != nullptr ? connect : "127.0.0.1:1234",
                           std::chrono::milliseconds(timeout_ms == 0 ? 10000 : timeout_ms));
    if (!s.ok()) {
      std::string text(s.status().message());
      if (absl::IsUnavailable(s.status()) && text.starts_with("cannot connect")) {
        text += ". Start a stub first, e.g. `gdbserver 127.0.0.1:1234 ./program` or `qemu-system-x86_64 -s -S ...`";
      }
      write(error, text + ".");
      return nullptr;
    }
    auto* a = new adapter();
    a->s = std::move(*s);
    auto& tb = a->table;
    tb.struct_size = sizeof(tb);
    tb.impl = a;
    tb.capabilities = caps;
    tb.close = close_session;
    tb.describe = describe;
    tb.read_memory = read_memory;
    tb.write_memory = write_memory;
    tb.read_registers = read_registers;
    tb.write_register = write_register;
    tb.set_breakpoint = set_bp;
    tb.clear_breakpoint = clear_bp;
    tb.resume = resume;
    tb.interrupt = interrupt;
    tb.wait_stop = wait_stop;
    tb.is_running = is_running;
    tb.list_threads = list_threads;
    tb.select_thread = select_thread;
    tb.list_modules = list_modules;
    tb.read_output = read_output;
    tb.extension = extension;
    tb.resume_with_signal = resume_with_signal;
    tb.pass_signals = pass_signals;
    tb.read_siginfo = read_siginfo;
    return &a->table;
  } catch (const std::exception& e) {
    write(error, std::string("gdb backend: ") + e.what());
  } catch (...) {
    write(error, "gdb backend: unknown exception while connecting");
  }
  return nullptr;
}

const toolhost_debug_target_factory_t kFactory = {
    sizeof(toolhost_debug_target_factory_t),
    TOOLHOST_DEBUG_TARGET_VERSION,
    "gdb",
    "GDB remote protocol over TCP: gdbserver (a Linux process) or QEMU's gdbstub (-s -S, a whole machine)",
    "127.0.0.1:1234",
    "host:port of the GDB stub (gdbserver HOST:PORT, or QEMU -s, which listens on 127.0.0.1:1234), or the path of a Unix socket (QEMU -gdb unix:PATH,server=on)",
    &open,
};

}  // namespace

const toolhost_debug_target_factory_t* factory() { return &kFactory; }

}  // namespace toolhost::gdb
