#include "target_adapter.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include <absl/strings/str_format.h>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::dump_backend {
namespace {

using sdk::write;

struct session {
  toolhost_debug_target_t iface{};
  std::unique_ptr<snapshot> snap;
  size_t current = 0;  // index into snap->threads
  bool stop_reported = false;
};

session* S(toolhost_debug_target_t* t) { return static_cast<session*>(t->impl); }

toolhost_status_t to_status(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kOk: return TOOLHOST_OK;
    case absl::StatusCode::kNotFound: return TOOLHOST_ERR_NOT_FOUND;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange: return TOOLHOST_ERR_INVALID_ARGUMENT;
    case absl::StatusCode::kUnimplemented: return TOOLHOST_ERR_UNSUPPORTED;
    default: return TOOLHOST_ERR_INTERNAL;
  }
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20) {
      out += absl::StrFormat("\\u%04x", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

toolhost_status_t unsupported(toolhost_debug_target_t* t, toolhost_writer_t* error) {
  write(error, S(t)->snap->why_no_run_control());
  return TOOLHOST_ERR_UNSUPPORTED;
}

uint64_t capabilities(toolhost_debug_target_t* t) {
  const snapshot& s = *S(t)->snap;
  uint64_t caps = TOOLHOST_DT_CAP_REGISTERS;
  if (s.has_virtual()) caps |= TOOLHOST_DT_CAP_READ_VIRTUAL;
  if (s.has_physical()) caps |= TOOLHOST_DT_CAP_READ_PHYSICAL;
  if (s.is_live() && s.has_physical()) caps |= TOOLHOST_DT_CAP_WRITE_PHYSICAL;
  if (s.threads.size() > 1) caps |= TOOLHOST_DT_CAP_THREADS;
  if (!s.modules.empty()) caps |= TOOLHOST_DT_CAP_MODULES;
  if (s.registers.empty()) caps &= ~TOOLHOST_DT_CAP_REGISTERS;
  return caps;
}

void close(toolhost_debug_target_t* t) { delete S(t); }

void describe(toolhost_debug_target_t* t, toolhost_writer_t* out) {
  const snapshot& s = *S(t)->snap;
  std::string j = absl::StrFormat("{\"arch\":\"x86_64\",\"os\":\"%s\",\"kind\":\"%s\",\"registers\":[", s.os(), s.kind());
  for (size_t i = 0; i < s.registers.size(); ++i) {
    const register_def d = x86_register(s.registers[i]);
    j += absl::StrFormat("%s{\"name\":\"%s\",\"bits\":%u,\"offset\":%u,\"role\":\"%s\"}", i ? "," : "", d.name, d.bits, i * 8, d.role);
  }
  j += "],\"hints\":{" + s.hints_json() + "}}";
  write(out, j);
}

toolhost_status_t read_memory(toolhost_debug_target_t* t, toolhost_dt_space_t space, uint64_t address, void* buffer,
                              size_t size, size_t* done, toolhost_writer_t* error) {
  session& ss = *S(t);
  *done = 0;
  if (size == 0) return TOOLHOST_OK;
  std::span<uint8_t> out(static_cast<uint8_t*>(buffer), size);
  absl::StatusOr<size_t> n;
  if (space == TOOLHOST_DT_PHYSICAL) {
    if (!ss.snap->has_physical()) {
      write(error, "This target has no physical address space (a process core holds virtual memory only).");
      return TOOLHOST_ERR_UNSUPPORTED;
    }
    n = ss.snap->read_physical(address, out);
  } else if (space == TOOLHOST_DT_VIRTUAL) {
    if (!ss.snap->has_virtual()) {
      write(error, "Virtual addresses need a page-table base (CR3): give one when opening the target.");
      return TOOLHOST_ERR_UNSUPPORTED;
    }
    const int64_t thread = ss.snap->threads.empty() ? -1 : ss.snap->threads[ss.current].id;
    n = ss.snap->read_virtual(address, out, thread);
  } else {
    write(error, absl::StrFormat("Unknown address space %d.", space));
    return TOOLHOST_ERR_INVALID_ARGUMENT;
  }
  if (!n.ok()) {
    write(error, std::string(n.status().message()));
    return to_status(n.status());
  }
  *done = *n;
  return TOOLHOST_OK;
}

toolhost_status_t write_memory(toolhost_debug_target_t* t, toolhost_dt_space_t space, uint64_t address, const void* data,
                               size_t size, toolhost_writer_t* error) {
  session& ss = *S(t);
  if (!ss.snap->is_live()) {
    write(error, "A dump file is read-only: memory cannot be written.");
    return TOOLHOST_ERR_UNSUPPORTED;
  }
  if (space != TOOLHOST_DT_PHYSICAL) {
    write(error, "This backend writes physical memory only.");
    return TOOLHOST_ERR_UNSUPPORTED;
  }
  const absl::Status s = ss.snap->write_physical(address, {static_cast<const uint8_t*>(data), size});
  if (!s.ok()) write(error, std::string(s.message()));
  return to_status(s);
}

size_t find_thread(const snapshot& s, int64_t id, size_t current) {
  if (id == -1) return current;
  for (size_t i = 0; i < s.threads.size(); ++i) {
    if (s.threads[i].id == id) return i;
  }
  return SIZE_MAX;
}

toolhost_status_t read_registers(toolhost_debug_target_t* t, int64_t thread, void* buffer, size_t size, size_t* done,
                                 toolhost_writer_t* error) {
  session& ss = *S(t);
  *done = 0;
  if (ss.snap->threads.empty() || ss.snap->registers.empty()) {
    write(error, "This target has no registers: it is memory only.");
    return TOOLHOST_ERR_UNSUPPORTED;
  }
  const size_t index = find_thread(*ss.snap, thread, ss.current);
  if (index == SIZE_MAX) {
    write(error, absl::StrFormat("There is no thread %d in this dump.", thread));
    return TOOLHOST_ERR_NOT_FOUND;
  }
  const std::vector<uint64_t>& v = ss.snap->threads[index].values;
  const size_t need = v.size() * 8;
  if (size < need) {
    write(error, absl::StrFormat("The register buffer holds %u bytes; the register map needs %u.", size, need));
    return TOOLHOST_ERR_INVALID_ARGUMENT;
  }
  std::memcpy(buffer, v.data(), need);
  *done = need;
  return TOOLHOST_OK;
}

toolhost_status_t write_register(toolhost_debug_target_t* t, int64_t, uint32_t, const void*, size_t, toolhost_writer_t* error) {
  write(error, S(t)->snap->is_live() ? "The memory backend cannot see or change the VM's registers; use the gdb backend."
                                     : "A dump file is read-only: registers cannot be changed.");
  return TOOLHOST_ERR_UNSUPPORTED;
}

toolhost_status_t set_breakpoint(toolhost_debug_target_t* t, toolhost_dt_breakpoint_type_t, uint64_t, uint32_t,
                                 toolhost_writer_t* error) {
  return unsupported(t, error);
}

toolhost_status_t resume(toolhost_debug_target_t* t, toolhost_dt_resume_t, int64_t, toolhost_writer_t* error) {
  return unsupported(t, error);
}

toolhost_status_t interrupt(toolhost_debug_target_t* t, toolhost_writer_t* error) { return unsupported(t, error); }

toolhost_status_t wait_stop(toolhost_debug_target_t* t, uint32_t, toolhost_dt_stop_t* stop, toolhost_writer_t* error) {
  session& ss = *S(t);
  if (!ss.stop_reported && !ss.snap->is_live()) {
    ss.stop_reported = true;
    const uint32_t size = stop->struct_size != 0 && stop->struct_size < sizeof *stop ? stop->struct_size : sizeof *stop;
    toolhost_dt_stop_t s = ss.snap->initial_stop();
    std::memcpy(stop, &s, size);
    stop->struct_size = size;
    return TOOLHOST_OK;
  }
  return unsupported(t, error);
}

toolhost_status_t read_siginfo(toolhost_debug_target_t* t, void* buffer, size_t size, size_t* done,
                               toolhost_writer_t* error) {
  *done = 0;
  const std::string info = S(t)->snap->siginfo();
  if (info.empty()) {
    write(error, "this snapshot holds no siginfo");
    return TOOLHOST_ERR_NOT_FOUND;
  }
  *done = std::min(size, info.size());
  std::memcpy(buffer, info.data(), *done);
  return TOOLHOST_OK;
}

bool is_running(toolhost_debug_target_t* t) { return S(t)->snap->is_live(); }

void list_threads(toolhost_debug_target_t* t, toolhost_writer_t* out) {
  const session& ss = *S(t);
  std::string j = "[";
  for (size_t i = 0; i < ss.snap->threads.size(); ++i) {
    const thread_state& th = ss.snap->threads[i];
    j += absl::StrFormat("%s{\"id\":%d,\"name\":%s,\"current\":%s}", i ? "," : "", th.id, json_string(th.name),
                         i == ss.current ? "true" : "false");
  }
  write(out, j + "]");
}

toolhost_status_t select_thread(toolhost_debug_target_t* t, int64_t thread, toolhost_writer_t* error) {
  session& ss = *S(t);
  const size_t index = find_thread(*ss.snap, thread, ss.current);
  if (index == SIZE_MAX) {
    write(error, absl::StrFormat("There is no thread %d in this dump.", thread));
    return TOOLHOST_ERR_NOT_FOUND;
  }
  ss.current = index;
  return TOOLHOST_OK;
}

void list_modules(toolhost_debug_target_t* t, toolhost_writer_t* out) {
  const snapshot& s = *S(t)->snap;
  std::string j = "[";
  for (size_t i = 0; i < s.modules.size(); ++i) {
    const module_info& m = s.modules[i];
    j += absl::StrFormat("%s{\"name\":%s,\"path\":%s,\"base\":\"0x%x\",\"size\":\"0x%x\"}", i ? "," : "",
                         json_string(m.name), json_string(m.path), m.base, m.size);
  }
  write(out, j + "]");
}

void read_output(toolhost_debug_target_t*, toolhost_writer_t*) {}

toolhost_status_t extension(toolhost_debug_target_t* t, const char* operation, const char*, toolhost_writer_t* out) {
  write(out, absl::StrFormat("The %s backend has no operation \"%s\".", S(t)->snap->is_live() ? "memory" : "dump",
                             operation != nullptr ? operation : ""));
  return TOOLHOST_ERR_UNSUPPORTED;
}

}  // namespace

toolhost_debug_target_t* make_target(std::unique_ptr<snapshot> snap) {
  auto* s = new session();
  s->snap = std::move(snap);
  toolhost_debug_target_t& i = s->iface;
  i.struct_size = sizeof i;
  i.impl = s;
  i.capabilities = capabilities;
  i.close = close;
  i.describe = describe;
  i.read_memory = read_memory;
  i.write_memory = write_memory;
  i.read_registers = read_registers;
  i.write_register = write_register;
  i.set_breakpoint = set_breakpoint;
  i.clear_breakpoint = set_breakpoint;
  i.resume = resume;
  i.interrupt = interrupt;
  i.wait_stop = wait_stop;
  i.is_running = is_running;
  i.list_threads = list_threads;
  i.select_thread = select_thread;
  i.list_modules = list_modules;
  i.read_output = read_output;
  i.extension = extension;
  i.read_siginfo = read_siginfo;
  return &i;
}

snapshot* snapshot_of(toolhost_debug_target_t* t) {
  return t != nullptr && t->close == close ? S(t)->snap.get() : nullptr;
}

toolhost_debug_target_t* open_target(toolhost_writer_t* error, std::string_view what,
                                     const std::function<absl::StatusOr<std::unique_ptr<snapshot>>()>& open_snapshot) noexcept {
  auto say = [error](const std::string& text) { sdk::write(error, text); };
  try {
    absl::StatusOr<std::unique_ptr<snapshot>> snap = open_snapshot();
    if (!snap.ok()) {
      say(std::string(snap.status().message()));
      return nullptr;
    }
    return make_target(std::move(*snap));
  } catch (const std::exception& e) {
    say(std::string(what) + " could not be opened: " + e.what());
  } catch (...) {
    say(std::string(what) + " could not be opened (unexpected error).");
  }
  return nullptr;
}

}  // namespace toolhost::dump_backend
