#include "tools.hpp"

#include <cstddef>
#include <cstdlib>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

#include "command_line.hpp"

namespace toolhost::debugger {

const char* const kInstructions =
    "Kernel and process debugger with WinDbg syntax (ntoseye's tool surface). `command` runs one REPL line "
    "(`;` separates commands; `help` lists them) and ends with a `[target ...]` trailer; it never waits longer "
    "than timeout_ms: a resuming command (g, p, t, gu, pa) that sees no stop in time ends in [target running], "
    "and a later halted-only command (k, r, bp, ...) waits for the stop first. A stop that happened between "
    "calls is shown at the top of the next result, and a resuming command in that call is refused once so "
    "you see it. `break` interrupts. Long results are paged: the footer names the `output` id to read on "
    "or to filter. When no target is attached, do not guess: ask the user how the VM or process is exposed "
    "(backend kd, kdnet, gdb, memory or dump, and the socket, host:port, key or file), then call `open`.";

namespace {

constexpr const char* kBackends[] = {"kd", "kdnet", "gdb", "memory", "dump"};

std::string no_target_text() {
  return "No target is attached. Ask the user how the target is exposed (backend kd, kdnet, gdb, memory or dump, "
         "and its connect string or key), then call `open`.";
}

}  // namespace

debugger_tools::debugger_tools(factory_lookup lookup, launch_settings launch)
    : lookup_(std::move(lookup)), launch_(std::move(launch)), service_([this] { service_loop(); }) {
  // The setting wins over the environment, as WinDbg's -y wins over _NT_SYMBOL_PATH; the
  // alternate path is searched first.
  if (!launch_.symbol_path.empty()) {
    symbol_path_ = launch_.symbol_path;
  } else {
    for (const char* name : {"_NT_ALT_SYMBOL_PATH", "_NT_SYMBOL_PATH"}) {
      if (const char* v = std::getenv(name); v != nullptr && *v != '\0') {
        symbol_path_ += (symbol_path_.empty() ? "" : ";") + std::string(v);
      }
    }
  }
}

debugger_tools::~debugger_tools() {
  {
    std::lock_guard lock(service_mutex_);
    stopping_ = true;
  }
  service_wake_.notify_all();
  service_.join();
  std::lock_guard lock(mutex_);
  session_.reset();
}

void debugger_tools::service_loop() {
  std::unique_lock wait_lock(service_mutex_);
  while (!stopping_) {
    service_wake_.wait_for(wait_lock, std::chrono::milliseconds(20));
    if (stopping_) break;
    // A call in progress owns the session; try again at the next tick.
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (lock.owns_lock() && session_) session_->service();
  }
}

absl::StatusOr<std::string> debugger_tools::attach(const std::string& backend, const std::string& connect,
                                                   const std::string& key) {
  bool known = false;
  for (const char* b : kBackends) known = known || backend == b;
  if (!known) {
    return absl::InvalidArgumentError("'" + backend + "' is not a backend; use kd, kdnet, gdb, memory or dump");
  }
  const toolhost_debug_target_factory_t* factory = lookup_(backend);
  if (factory == nullptr) {
    std::string available;
    for (const char* b : kBackends) {
      if (lookup_(b) != nullptr) available += std::string(available.empty() ? "" : ", ") + b;
    }
    return absl::UnavailableError(
        "the " + backend + " backend is not loaded in this server (add the \"" + backend +
        "-backend\" plugin to its plugins list). Available here: " + (available.empty() ? "none" : available) + ".");
  }
  // Every minor of our major: the fields of 1.0 are all we need (see debug_target.h).
  constexpr size_t kFactory10 = offsetof(toolhost_debug_target_factory_t, open) + sizeof(factory->open);
  if (factory->struct_size < kFactory10 || factory->open == nullptr) {
    return absl::FailedPreconditionError(
        "the " + backend + " backend's factory is malformed (struct_size " + std::to_string(factory->struct_size) +
        ", " + (factory->struct_size < kFactory10 ? "shorter than debug-target 1.0" : "no open function") +
        "); rebuild the backend against this SDK");
  }
  if (factory->version != TOOLHOST_DEBUG_TARGET_MAJOR) {
    const uint32_t minor = TOOLHOST_HAS_FIELD(factory, toolhost_debug_target_factory_t, minor) ? factory->minor : 0;
    return absl::FailedPreconditionError("the " + backend + " backend implements debug-target interface " +
                                         std::to_string(factory->version) + "." + std::to_string(minor) +
                                         ", but this debugger speaks " + std::to_string(TOOLHOST_DEBUG_TARGET_MAJOR) +
                                         ".x; rebuild the backend against this toolhost's SDK");
  }
  std::string where = connect;
  if (where.empty() && factory->default_connect != nullptr) where = factory->default_connect;
  sdk::string_writer error;
  toolhost_debug_target_t* raw =
      factory->open(factory, where.c_str(), key.empty() ? nullptr : key.c_str(), nullptr, 10000, error.raw());
  if (raw == nullptr) {
    std::string text = error.text().empty() ? "the " + backend + " backend could not open " + where : error.text();
    if (factory->connect_help != nullptr) text += " (connect: " + std::string(factory->connect_help) + ")";
    return absl::UnavailableError(text);
  }
  constexpr size_t kSession10 = offsetof(toolhost_debug_target_t, extension) + sizeof(raw->extension);
  if (raw->struct_size < kSession10) {
    const uint32_t size = raw->struct_size;
    if (size >= offsetof(toolhost_debug_target_t, close) + sizeof(raw->close) && raw->close != nullptr) raw->close(raw);
    return absl::FailedPreconditionError("the " + backend + " backend opened a session whose table is " +
                                         std::to_string(size) + " bytes, shorter than debug-target 1.0 (" +
                                         std::to_string(kSession10) + "); rebuild the backend against this SDK");
  }
  session_ = std::make_unique<session>(std::make_unique<target>(raw, backend));
  std::string notice;
  session_->set_symbol_timeout(std::chrono::milliseconds(launch_.symbol_timeout_ms));
  if (absl::Status s = session_->set_symbol_path(symbol_path_); !s.ok()) {
    notice = "The symbol path is not used: " + std::string(s.message()) + " (.sympath sets another).\n";
  }
  backend_ = backend;
  connect_ = where;
  return notice + session_->attach_text();
}

sdk::result debugger_tools::open(const std::string& backend, const std::string& connect, const std::string& key) {
  std::lock_guard lock(mutex_);
  if (session_) {
    return sdk::result::error("A session is already active (" + backend_ + " at " + connect_ +
                              "); one session at a time: `close` it first.");
  }
  auto text = attach(backend, connect, key);
  if (!text.ok()) return sdk::result::error(std::string(text.status().message()));
  const auto threads = session_->tgt().threads();
  const std::string json = R"({"status":"connected","backend":)" + sdk::quote(backend_) + R"(,"connect":)" +
                           sdk::quote(connect_) + R"(,"processors":)" + std::to_string(threads.size()) + R"(,"kind":)" +
                           sdk::quote(session_->tgt().kind()) + "}";
  auto line = session_->run_line("", std::chrono::milliseconds(0), [] { return false; });
  return sdk::result::structured(json).add_text("Connected to " + backend_ + " at " + connect_ + ".\n" + *text +
                                                line.trailer);
}

sdk::result debugger_tools::close() {
  std::lock_guard lock(mutex_);
  if (!session_) return sdk::result::structured(R"({"status":"closed"})").add_text("No session was open.");
  session_.reset();  // the backend removes its breakpoints and lets the target run
  const std::string text = "Closed the " + backend_ + " session at " + connect_ + ".";
  backend_.clear();
  connect_.clear();
  return sdk::result::structured(R"({"status":"closed"})").add_text(text);
}

sdk::result debugger_tools::command(const std::string& line, int64_t timeout_ms, const std::string& format,
                                    const std::function<bool()>& cancelled, const session::progress_fn& progress) {
  if (timeout_ms <= 0) timeout_ms = kDefaultTimeoutMs;
  if (timeout_ms > kMaxTimeoutMs) {
    return sdk::result::error("timeout_ms is at most 300000 (5 minutes); got " + std::to_string(timeout_ms) + ".");
  }
  if (format != "text" && format != "json") return sdk::result::error("format is \"text\" or \"json\".");
  std::lock_guard lock(mutex_);
  std::string preface;
  if (!session_ && !launch_.backend.empty()) {
    // Launch-time attach: the server's settings name the target, as ntoseye's --backend flags.
    auto text = attach(launch_.backend, launch_.connect, launch_.key);
    if (!text.ok()) {
      return sdk::result::error("Could not attach to the configured target (" + launch_.backend +
                                "): " + std::string(text.status().message()));
    }
    preface = "Attached to " + backend_ + " at " + connect_ + ".\n" + *text;
  }
  if (!session_) {
    // help works without a target; everything else needs one.
    const auto cmds = split_commands(line);
    if (!cmds.empty()) {
      const auto first = parse_command(cmds[0]);
      if (cmds.size() == 1 && (first.name == "help" || first.name == ".help")) {
        auto text = render_help(first.args);
        if (!text.ok()) return sdk::result::error(std::string(text.status().message()));
        return sdk::result::text(*text + "[no target]");
      }
    }
    return sdk::result::error(no_target_text());
  }
  line_result r = session_->run_line(line, std::chrono::milliseconds(timeout_ms), cancelled, progress);
  symbol_path_ = session_->symbol_path().text();
  if (session_->detach_requested()) {
    const bool skipped = session_->detach_skipped_rest();
    session_.reset();  // the backend removes its breakpoints and lets the target run
    r.output += "Detached from " + backend_ + " at " + connect_ +
                ": the breakpoints are removed and the target runs on. "
                "`open` attaches again.\n";
    if (skipped) r.output += "The commands after .detach on the line were not run.\n";
    r.trailer = "[no target]";
    r.target_json = R"({"running":true,"attached":false})";
    backend_.clear();
    connect_.clear();
  }
  const std::string paged = store_.page(preface + r.output);
  std::string body = paged;
  if (!body.empty() && body.back() != '\n') body += '\n';
  std::string debug = "[";
  for (const auto& d : r.debug_output) {
    body += "[dbgprint] " + d + "\n";
    if (debug.size() > 1) debug += ',';
    debug += sdk::quote(d);
  }
  debug += "]";
  body += r.trailer;
  if (format == "json") {
    const std::string json = R"({"ok":)" + std::string(r.error ? "false" : "true") + R"(,"output":)" +
                             sdk::quote(paged) + R"(,"result":)" + r.result_json + R"(,"target":)" + r.target_json +
                             R"(,"debug_output":)" + debug + "}";
    return sdk::result::structured(json).add_text(body).set_error(r.error);
  }
  return sdk::result::text(body).set_error(r.error);
}

sdk::result debugger_tools::output(int64_t id, int64_t offset, int64_t limit, const std::string& filter) {
  if (id <= 0 || offset < 0 || limit < 0)
    return sdk::result::error("id is at least 1; offset and limit are not negative.");
  auto text =
      store_.read(static_cast<uint64_t>(id), static_cast<uint64_t>(offset), static_cast<uint64_t>(limit), filter);
  if (!text.ok()) return sdk::result::error(std::string(text.status().message()));
  return sdk::result::text(*text);
}

}  // namespace toolhost::debugger
