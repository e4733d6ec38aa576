#include "host/plugins/isolation/child_main.hpp"

#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <absl/strings/str_join.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/strings.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/log.hpp"
#include "host/mcp/call_context.hpp"
#include "host/mcp/uri_template.hpp"
#include "host/mcp/worker_pool.hpp"
#include "host/plugins/instance.hpp"
#include "host/plugins/isolation/frame.hpp"
#include "host/plugins/isolation/snapshot.hpp"
#include "host/plugins/loader.hpp"
#include "host/plugins/registry.hpp"

namespace toolhost::plugins::isolation {
namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// What plugins announce outside calls, sent to the parent, which tells the clients.
class forwarding_events final : public host_events {
 public:
  explicit forwarding_events(channel& ch) : ch_(ch) {}
  void list_changed(std::string_view plugin, uint32_t lists) override {
    ch_.send(kind::list_changed, 0, {plugin, std::to_string(lists)});
  }
  void resource_updated(std::string_view uri) override { ch_.send(kind::resource_updated, 0, {uri}); }
  void log(toolhost_log_level_t level, std::string_view logger, std::string_view data_json) override {
    ch_.send(kind::log, 0, {std::to_string(level), logger, data_json});
  }

 private:
  channel& ch_;
};

// One call the parent sent: the toolhost_call_t its plugin sees, whose functions become frames.
struct child_call {
  channel* ch = nullptr;
  std::function<void()> before_wait;  // called before the call waits for an answer (see child_server)
  uint64_t id = 0;
  std::string op, name, arguments, meta, capabilities, protocol_version, server_name;
  bool wants_progress = false;
  mcp::call_state state;
  toolhost_call_t raw{};

  std::mutex m;
  std::condition_variable cv;
  uint64_t next_question = 1;
  std::map<uint64_t, std::optional<std::pair<int32_t, std::string>>> answers;

  // Sends a question to the parent and waits for its answer.
  std::pair<int32_t, std::string> ask(std::string_view method, std::string_view params, uint32_t timeout_ms) {
    uint64_t q = 0;
    {
      std::lock_guard lock(m);
      q = next_question++;
      answers[q];
    }
    ch->send(kind::ask, id, {std::to_string(q), method, params, std::to_string(timeout_ms)});
    if (before_wait) before_wait();
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return answers[q].has_value(); });
    auto a = std::move(*answers[q]);
    answers.erase(q);
    return a;
  }
};

child_call& of(const toolhost_call_t* raw) { return *static_cast<child_call*>(raw->host_data); }

void call_progress(const toolhost_call_t* raw, double progress, double total, const char* message) {
  child_call& c = of(raw);
  if (!c.wants_progress || c.state.cancelled || !c.state.admit_progress(progress)) return;
  c.ch->send(kind::progress, c.id,
             {number(progress), number(total), message != nullptr ? message : "", message != nullptr ? "1" : "0"});
}

bool call_is_cancelled(const toolhost_call_t* raw) { return of(raw).state.cancelled.load(); }

void call_on_cancel(const toolhost_call_t* raw, toolhost_cancel_fn fn, void* user_data) {
  of(raw).state.set_cancel_handler(fn, user_data);
}

void call_log(const toolhost_call_t* raw, toolhost_log_level_t level, const char* logger, const char* data_json) {
  child_call& c = of(raw);
  c.ch->send(kind::call_log, c.id,
             {std::to_string(level), logger != nullptr ? logger : "", data_json != nullptr ? data_json : "null"});
}

toolhost_status_t call_client_request(const toolhost_call_t* raw, const char* method, const char* params_json,
                                      uint32_t timeout_ms, toolhost_writer_t* out) {
  auto [status, text] =
      of(raw).ask(method != nullptr ? method : "", params_json != nullptr ? params_json : "{}", timeout_ms);
  sdk::write(out, text);
  return status;
}

bool call_confirm_whole_file(const toolhost_call_t* raw, const char* what) {
  return of(raw).ask("confirm_whole_file", what != nullptr ? what : "a file", 0).first == 1;
}

void fill_context(child_call& c) {
  c.raw.struct_size = sizeof(c.raw);
  c.raw.host_data = &c;
  c.raw.meta_json = c.meta.c_str();
  c.raw.client_capabilities_json = c.capabilities.c_str();
  c.raw.server_name = c.server_name.c_str();
  c.raw.protocol_version = c.protocol_version.c_str();
  c.raw.progress = call_progress;
  c.raw.is_cancelled = call_is_cancelled;
  c.raw.on_cancel = call_on_cancel;
  c.raw.log = call_log;
  c.raw.client_request = call_client_request;
  c.raw.confirm_whole_file = call_confirm_whole_file;
}

// A provider's function: op "p.FUNCTION", name "INDEX" or "INDEX NAME" (the provider's index in
// the registry, then the tool, URI or prompt). NOT_FOUND: it does not serve the name.
std::pair<int32_t, std::string> run_provider(registry& reg, child_call& c) {
  const size_t space = c.name.find(' ');
  const size_t index = std::strtoul(c.name.substr(0, space).c_str(), nullptr, 10);
  const std::string item = space == std::string::npos ? "" : c.name.substr(space + 1);
  if (index >= reg.providers().size()) return {TOOLHOST_ERR_NOT_FOUND, ""};
  const toolhost_provider_desc_t& d = reg.providers()[index].desc;
  sdk::string_writer out;
  using list_fn = void (*)(void*, toolhost_writer_t*);
  const std::pair<const char*, list_fn> lists[] = {{"p.list_tools", d.list_tools},
                                                   {"p.list_resources", d.list_resources},
                                                   {"p.list_resource_templates", d.list_resource_templates},
                                                   {"p.list_prompts", d.list_prompts},
                                                   {"p.instructions", d.instructions}};
  for (const auto& [op, fn] : lists) {
    if (c.op != op) continue;
    if (fn == nullptr) return {TOOLHOST_ERR_NOT_FOUND, ""};
    fn(d.user_data, out.raw());
    return {TOOLHOST_OK, out.take()};
  }
  if (c.op == "p.call_tool" && d.call_tool != nullptr) {
    const bool served =
        d.call_tool(d.user_data, &c.raw, item.c_str(), c.arguments.c_str(), c.arguments.size(), out.raw());
    return {served ? TOOLHOST_OK : TOOLHOST_ERR_NOT_FOUND, out.take()};
  }
  if (c.op == "p.read_resource" && d.read_resource != nullptr) {
    const toolhost_status_t s = d.read_resource(d.user_data, &c.raw, item.c_str(), out.raw());
    return {s, out.take()};
  }
  if (c.op == "p.get_prompt" && d.get_prompt != nullptr) {
    const toolhost_status_t s = d.get_prompt(d.user_data, &c.raw, item.c_str(), c.arguments.c_str(), out.raw());
    return {s, out.take()};
  }
  if (c.op == "p.complete" && d.complete != nullptr) {  // arguments: [ref JSON, argument, value, context JSON]
    auto doc = sdk::parse_json(c.arguments);
    if (!doc || !doc->IsArray() || doc->Size() != 4) return {TOOLHOST_ERR_INVALID_ARGUMENT, ""};
    for (const auto& v : doc->GetArray()) {
      if (!v.IsString()) return {TOOLHOST_ERR_INVALID_ARGUMENT, ""};
    }
    const bool known = d.complete(d.user_data, (*doc)[0].GetString(), (*doc)[1].GetString(), (*doc)[2].GetString(),
                                  (*doc)[3].GetString(), out.raw());
    return {known ? TOOLHOST_OK : TOOLHOST_ERR_NOT_FOUND, out.take()};
  }
  return {TOOLHOST_ERR_NOT_FOUND, ""};
}

// Runs one call against the group's registry; returns (status, text).
std::pair<int32_t, std::string> run(registry& reg, child_call& c) {
  sdk::string_writer out;
  if (c.op == "tool") {
    const tool* t = reg.find_tool(c.name);
    if (t == nullptr) return {TOOLHOST_ERR_NOT_FOUND, ""};
    t->call(t->user_data, &c.raw, c.arguments.c_str(), c.arguments.size(), out.raw());
    return {TOOLHOST_OK, out.take()};
  }
  if (c.op == "read") {  // name: the resource's URI or template as registered; arguments: the URI read
    for (const resource& r : reg.resources()) {
      if (r.uri != c.name) continue;
      const toolhost_status_t s = r.read(r.user_data, &c.raw, c.arguments.c_str(), out.raw());
      return {s, out.take()};
    }
    return {TOOLHOST_ERR_NOT_FOUND, ""};
  }
  if (c.op == "prompt") {
    const prompt* p = reg.find_prompt(c.name);
    if (p == nullptr) return {TOOLHOST_ERR_NOT_FOUND, ""};
    const toolhost_status_t s = p->get(p->user_data, &c.raw, c.arguments.c_str(), out.raw());
    return {s, out.take()};
  }
  if (c.op == "complete") {  // name: "resource:URI" or "prompt:NAME"; arguments: [argument, value, context]
    auto doc = sdk::parse_json(c.arguments);
    if (!doc || !doc->IsArray() || doc->Size() != 3 || !(*doc)[0].IsString() || !(*doc)[1].IsString() ||
        !(*doc)[2].IsString()) {
      return {TOOLHOST_ERR_INVALID_ARGUMENT, ""};
    }
    const std::string argument = (*doc)[0].GetString(), value = (*doc)[1].GetString(), context = (*doc)[2].GetString();
    toolhost_complete_fn fn = nullptr;
    void* ud = nullptr;
    if (c.name.rfind("resource:", 0) == 0) {
      for (const resource& r : reg.resources()) {
        if (r.uri == std::string_view(c.name).substr(9)) fn = r.complete, ud = r.user_data;
      }
    } else if (c.name.rfind("prompt:", 0) == 0) {
      if (const prompt* p = reg.find_prompt(std::string_view(c.name).substr(7))) fn = p->complete, ud = p->user_data;
    }
    if (fn == nullptr) return {TOOLHOST_ERR_NOT_FOUND, ""};
    fn(ud, argument.c_str(), value.c_str(), context.c_str(), out.raw());
    return {TOOLHOST_OK, out.take()};
  }
  if (c.op.rfind("p.", 0) == 0) return run_provider(reg, c);
  return {TOOLHOST_ERR_INVALID_ARGUMENT, ""};
}

struct start_request {
  std::string server, config_dir;
  std::vector<std::string> dirs;
  bool listing = false, checking = false;
  uint64_t memory_limit_mb = 0;
  struct plugin {
    std::string id, settings;
    config::settings_origin origin;
  };
  std::vector<plugin> plugins;
};

std::optional<start_request> read_start(std::string_view json) {
  auto doc = sdk::parse_json(json);
  if (!doc || !doc->IsObject()) return std::nullopt;
  start_request r;
  r.server = std::string(sdk::string_member(*doc, "server").value_or(""));
  r.config_dir = std::string(sdk::string_member(*doc, "config_dir").value_or(""));
  if (const auto* d = sdk::member(*doc, "dirs"); d != nullptr && d->IsArray()) {
    for (const auto& v : d->GetArray()) r.dirs.emplace_back(v.GetString(), v.GetStringLength());
  }
  if (const auto* v = sdk::member(*doc, "listing")) r.listing = v->IsTrue();
  if (const auto* v = sdk::member(*doc, "checking")) r.checking = v->IsTrue();
  if (const auto* v = sdk::member(*doc, "memory_limit_mb"); v != nullptr && v->IsUint64()) {
    r.memory_limit_mb = v->GetUint64();
  }
  if (const auto* ps = sdk::member(*doc, "plugins"); ps != nullptr && ps->IsArray()) {
    for (const auto& p : ps->GetArray()) {
      start_request::plugin out;
      out.id = std::string(sdk::string_member(p, "id").value_or(""));
      out.settings = std::string(sdk::string_member(p, "settings").value_or(""));
      out.origin.table = std::string(sdk::string_member(p, "origin_table").value_or(""));
      if (const auto* vs = sdk::member(p, "origins"); vs != nullptr && vs->IsObject()) {
        for (const auto& m : vs->GetObject()) out.origin.values[m.name.GetString()] = m.value.GetString();
      }
      r.plugins.push_back(std::move(out));
    }
  }
  return r;
}

// How long the reader keeps looking at the socket after a frame before it sleeps in read(): the
// parent's next call usually follows its answer within tens of microseconds, and waking a sleeping
// thread costs more than an echo's whole round trip (the parent's kSpin; host/mcp/worker_pool.cpp).
constexpr auto kLinger = std::chrono::microseconds(200);
// A call that runs on the reader thread this long has the other thread take over reading, so
// that its cancellation, the answers to its questions and further calls are read meanwhile.
constexpr auto kTakeover = std::chrono::milliseconds(2);
// The thread standing by checks on the reader every kTakeover while calls come, and sleeps for
// good (the reader wakes it for the next call) once none came for this long.
constexpr auto kStandbyRest = std::chrono::milliseconds(100);

// Serves the parent's calls once the plugins have started (DESIGN.md, "The hot path"). Two
// threads take turns reading the socket. The reader runs a call itself when no other call runs,
// as most calls are (no hand-off, no wake-up); the other stands by to take over reading when that
// call runs past kTakeover or asks the client something. A call that comes while another runs
// goes to a worker pool, as calls in process do.
class child_server {
 public:
  child_server(channel& ch, registry& reg, std::string server, std::vector<std::unique_ptr<instance>>& instances)
      : ch_(ch), reg_(reg), server_(std::move(server)), instances_(instances) {}

  [[noreturn]] void serve() {
    std::thread([this] { take_turns(); }).detach();
    take_turns();
  }

 private:
  using clock = std::chrono::steady_clock;

  [[noreturn]] void take_turns() {
    for (;;) {
      if (read_.try_lock()) {
        read();  // returns without read_, after running a call while the other thread took over
      } else {
        stand_by();
      }
    }
  }

  // With read_ held: reads and handles frames; returns (read_ released) when this thread ran a
  // call and the other one is reading now.
  void read() {
    frame f;
    std::string error;
    for (;;) {
      if (!next(f, error)) end(0);  // the parent is gone, or sent what this child cannot read
      if (f.kind == kind::call) {
        std::shared_ptr<child_call> c = make_call(f);
        bool here = false;
        {
          std::lock_guard lock(m_);
          calls_[c->id] = c;
          here = running_++ == 0;
          if (here) {
            inline_ = c.get();
            inline_since_ = clock::now();
            takeover_ = false;
            if (standby_asleep_) standby_cv_.notify_one();
          }
        }
        if (!here) {
          workers_.submit([this, c] { run_call(*c); });
          continue;
        }
        read_.unlock();
        run_call(*c);
        {
          std::lock_guard lock(m_);
          if (inline_ == c.get()) inline_ = nullptr;
          last_call_ = clock::now();
        }
        if (read_.try_lock()) continue;
        return;
      }
      if (f.kind == kind::stop) stop();
      if (f.kind != kind::cancel && f.kind != kind::answer) continue;
      std::shared_ptr<child_call> c;
      {
        std::lock_guard lock(m_);
        if (auto it = calls_.find(f.id); it != calls_.end()) c = it->second;
      }
      if (!c) continue;
      if (f.kind == kind::cancel) {
        c->state.cancel();
        continue;
      }
      std::lock_guard lock(c->m);
      const uint64_t q = std::strtoull(std::string(f.at(0)).c_str(), nullptr, 10);
      if (auto it = c->answers.find(q); it != c->answers.end()) {
        it->second.emplace(static_cast<int32_t>(std::strtol(std::string(f.at(1)).c_str(), nullptr, 10)),
                           std::string(f.at(2)));
        c->cv.notify_all();
      }
    }
  }

  // The next frame: looks for it for kLinger, then sleeps in read().
  bool next(frame& f, std::string& error) {
    for (const auto until = clock::now() + kLinger;;) {
      switch (ch_.try_receive(f, error)) {
        case channel::poll_result::got: return true;
        case channel::poll_result::closed: return false;
        case channel::poll_result::none: break;
      }
      if (clock::now() >= until) return ch_.receive(f, error);
      sched_yield();
    }
  }

  // Waits until the call running on the reader thread has run long, or asked the client something.
  void stand_by() {
    std::unique_lock lock(m_);
    for (;;) {
      const auto now = clock::now();
      if (inline_ != nullptr) {
        if (takeover_ || now >= inline_since_ + kTakeover) return;
        standby_cv_.wait_until(lock, inline_since_ + kTakeover);
      } else if (now < last_call_ + kStandbyRest) {
        standby_cv_.wait_for(lock, kTakeover);
      } else {
        standby_asleep_ = true;
        standby_cv_.wait(lock);
        standby_asleep_ = false;
      }
    }
  }

  std::shared_ptr<child_call> make_call(const frame& f) {
    auto c = std::make_shared<child_call>();
    c->ch = &ch_;
    c->id = f.id;
    c->op = std::string(f.at(0));
    c->name = std::string(f.at(1));
    c->arguments = std::string(f.at(2));
    c->meta = std::string(f.at(3));
    c->capabilities = std::string(f.at(4));
    c->protocol_version = std::string(f.at(5));
    c->wants_progress = f.at(6) == "1";
    c->server_name = server_;
    c->before_wait = [this] {
      std::lock_guard lock(m_);
      takeover_ = true;  // a call waiting for the client must not keep the socket unread
      standby_cv_.notify_one();
    };
    fill_context(*c);
    return c;
  }

  void run_call(child_call& c) {
    auto [status, text] = run(reg_, c);
    {
      std::lock_guard lock(m_);
      calls_.erase(c.id);
      // Before the answer: the parent's next call may follow it at once, and runs here then.
      if (--running_ == 0) idle_cv_.notify_all();
    }
    ch_.send(kind::result, c.id, {std::to_string(status), text});
  }

  [[noreturn]] void stop() {
    bool idle = false;
    {
      std::unique_lock lock(m_);
      idle = idle_cv_.wait_for(lock, std::chrono::seconds(2), [this] { return running_ == 0; });
    }
    if (idle) {
      for (auto it = instances_.rbegin(); it != instances_.rend(); ++it) (*it)->deinit();
    }
    end(0);
  }

  [[noreturn]] static void end(int status) {
    std::fflush(nullptr);
    std::_Exit(status);
  }

  channel& ch_;
  registry& reg_;
  std::string server_;
  std::vector<std::unique_ptr<instance>>& instances_;
  mcp::worker_pool workers_{0};
  std::mutex read_;  // held by the thread that reads the socket

  std::mutex m_;  // guards what follows
  std::condition_variable standby_cv_;
  std::condition_variable idle_cv_;
  std::map<uint64_t, std::shared_ptr<child_call>> calls_;
  size_t running_ = 0;
  child_call* inline_ = nullptr;  // the call running on the thread that was reading
  clock::time_point inline_since_{};
  bool takeover_ = false;
  bool standby_asleep_ = false;
  clock::time_point last_call_{};
};

}  // namespace

int plugin_child(int fd) {
  // Whatever a plugin prints goes to stderr: the parent gave us its stderr as fd 1 already; this
  // holds even if it did not.
  ::dup2(2, 1);
  ::signal(SIGPIPE, SIG_IGN);
  channel ch(fd);
  frame f;
  std::string error;
  if (!ch.receive(f, error) || f.kind != kind::start) return 2;
  auto start = read_start(f.at(0));
  if (!start) return 2;
  if (start->memory_limit_mb > 0) {
    // RLIMIT_DATA counts what a plugin allocates (heap and anonymous maps), not the address space
    // that thread stacks and malloc arenas only reserve.
    const rlim_t bytes = static_cast<rlim_t>(start->memory_limit_mb) << 20;
    rlimit lim{bytes, bytes};
    ::setrlimit(RLIMIT_DATA, &lim);
  }

  loader libs(start->dirs);
  registry reg(start->server);
  forwarding_events events(ch);
  std::vector<std::unique_ptr<instance>> instances;
  std::vector<plugin_outcome> outcomes;
  for (const auto& p : start->plugins) {
    plugin_outcome o{p.id, false, "", ""};
    library* lib = libs.find(p.id);
    if (lib == nullptr) {
      o.message =
          cat("server '", start->server, "': plugin '", p.id, "' was not found in ", absl::StrJoin(start->dirs, ", "));
    } else if (lib->status != load_status::loaded) {
      o.status = std::string(to_string(lib->status));
      o.message = lib->message;
    } else {
      auto inst = std::make_unique<instance>(*lib, reg, events, start->server, start->config_dir, p.settings,
                                             start->listing, p.origin, start->checking);
      o.started = inst->init();
      if (!o.started) {
        o.status = std::string(to_string(inst->status()));
        o.message = inst->message();
      }
      instances.push_back(std::move(inst));
    }
    outcomes.push_back(std::move(o));
  }
  ch.send(kind::ready, 0, {snapshot_of(reg, outcomes)});

  child_server(ch, reg, start->server, instances).serve();
}

}  // namespace toolhost::plugins::isolation
