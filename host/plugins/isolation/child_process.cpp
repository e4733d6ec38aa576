#include "host/plugins/isolation/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>
#include <vector>

#include <boost/dll/runtime_symbol_info.hpp>
#include <toolhost/sdk/strings.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/log.hpp"

extern char** environ;

namespace toolhost::plugins::isolation {
namespace {

// How long a cancelled call may go on before its child is killed: long enough for a plugin that
// polls is_cancelled between steps of real work, short enough that a stuck one frees its worker.
constexpr auto kCancelGrace = std::chrono::seconds(2);
// How long a child may take from exec to the snapshot of its registrations (every plugin's init).
constexpr int kStartSeconds = 60;
// Back-off before starting a child that keeps dying: from the second death in a row, 250 ms,
// doubling up to 8 s.
constexpr auto kFirstBackoff = std::chrono::milliseconds(250);
constexpr auto kMaxBackoff = std::chrono::seconds(8);
// A child that cannot be made for want of descriptors (or processes, or memory) is tried again
// for this long, 10 ms doubling to 500 ms between tries: such a shortage is usually brief (a
// flood of HTTP connections that the listener is shedding while the plugins start, which failed
// the isolated pass of the http limits test with "Too many open files"), and a plugin given up
// on at start stays missing until the server is started again.
constexpr auto kShortageRetryFor = std::chrono::seconds(3);

bool shortage(int err) { return err == EMFILE || err == ENFILE || err == EAGAIN || err == ENOMEM; }
// How long a call reads the socket for its own answer before it sleeps (see call()). Each thread
// that sleeps on the way costs a wake-up: 25-60 us where an idle virtual CPU must be woken
// (host/mcp/worker_pool.cpp), ~5 us on a busy one. The old path slept in four places (the child's
// reader, its worker, the parent's reader, this thread) and added 77-129 us p50 to an echo in
// bench/mcp. A 64-byte socketpair round trip on the 2-core test machine (load 6) takes 11.3 us
// p50 with both ends asleep in recv() and 6.6 us with both spinning; with this thread and the
// child's reader both looking at the socket, an isolated echo adds -8 to +12 us p50 (3 runs).
// Like the worker pool's linger, at most this much CPU per call is spent on it.
constexpr auto kSpin = std::chrono::microseconds(200);
// How long the background reader stays off the socket after a call last read it (read_frames()).
constexpr auto kReaderRest = std::chrono::milliseconds(10);

int32_t to_int(std::string_view s) { return static_cast<int32_t>(std::strtol(std::string(s).c_str(), nullptr, 10)); }

std::string what_ran(std::string_view op, std::string_view name) {
  if (op.rfind("p.", 0) == 0) {  // a provider's: name is "INDEX NAME"
    const size_t space = name.find(' ');
    name = space == std::string_view::npos ? std::string_view() : name.substr(space + 1);
    if (op == "p.call_tool") op = "tool";
    if (op == "p.read_resource") op = "read";
    if (op == "p.get_prompt") op = "prompt";
    if (op == "p.instructions") return "it wrote its instructions";
    if (op.rfind("p.list_", 0) == 0) return "it listed what it provides";
    if (op == "p.complete") return "it completed an argument";
  }
  if (op == "read") return cat("it read the resource ", name);
  if (op == "prompt") return cat("it rendered the prompt ", name);
  if (op == "complete") return cat("it completed an argument of ", name);
  return cat("the tool ", name, " was running");
}

}  // namespace

std::string describe_end(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* abbrev = sigabbrev_np(sig);
    return cat("crashed with ", abbrev != nullptr ? cat("SIG", abbrev) : cat("signal ", sig), " (signal ", sig, ")");
  }
  if (WIFEXITED(status)) return cat("exited with status ", WEXITSTATUS(status));
  return "ended";
}

struct child_process::pending {
  uint64_t id = 0;
  std::string op, plugin, name;
  const toolhost_call_t* context = nullptr;
  std::shared_ptr<channel> ch;
  std::mutex m;
  std::condition_variable cv;
  std::atomic<bool> done{false};  // set under m; read without it by a call that spins
  int32_t status = TOOLHOST_OK;
  std::string text;
  std::deque<frame> questions;
  std::atomic<bool> has_questions{false};
  std::chrono::steady_clock::time_point cancelled_at{};
};

child_process::child_process(group_spec spec, host_events& events) : spec_(std::move(spec)), events_(events) {}

child_process::~child_process() {
  stopping_ = true;
  if (const pid_t p = pid_.load(); p > 0 && running_) ::kill(p, SIGKILL);
  std::lock_guard lock(start_mutex_);
  if (reader_.joinable()) reader_.join();
}

absl::StatusOr<std::string> child_process::start() {
  std::lock_guard lock(start_mutex_);
  return spawn_locked();
}

int child_process::spawn_child(int* parent_end, pid_t* pid, std::string* why) const {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
    const int err = errno;
    *why = cat("cannot create the socket for the process of ", spec_.name, ": ", strerror(err));
    return err;
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  // fd 1 is the parent's stderr: nothing a plugin prints reaches the MCP stream.
  posix_spawn_file_actions_adddup2(&actions, 2, 1);
  posix_spawn_file_actions_adddup2(&actions, sv[1], 3);
  // Nothing else of the parent's (the protocol's descriptor, HTTP sockets, other children's
  // sockets) is inherited.
  posix_spawn_file_actions_addclosefrom_np(&actions, 4);
  const std::string exe = boost::dll::program_location().string();
  std::string arg = "--plugin-child=3";
  char* argv[] = {const_cast<char*>(exe.c_str()), arg.data(), nullptr};
  const int rc = ::posix_spawn(pid, exe.c_str(), &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(sv[1]);
  if (rc != 0) {
    ::close(sv[0]);
    *why = cat("cannot start ", exe, " for plugin ", spec_.name, ": ", strerror(rc));
    return rc;
  }
  *parent_end = sv[0];
  return 0;
}

absl::StatusOr<std::string> child_process::spawn_locked() {
  int socket_fd = -1;  // our end of the child's socket pair
  pid_t pid = 0;
  std::string why;
  const auto give_up = std::chrono::steady_clock::now() + kShortageRetryFor;
  for (auto pause = std::chrono::milliseconds(10);; pause = std::min(pause * 2, std::chrono::milliseconds(500))) {
    const int err = spawn_child(&socket_fd, &pid, &why);
    if (err == 0) break;
    if (!shortage(err) || stopping_ || std::chrono::steady_clock::now() + pause > give_up) {
      return absl::InternalError(why);
    }
    std::this_thread::sleep_for(pause);
  }
  auto ch = std::make_shared<channel>(socket_fd);
  timeval tv{kStartSeconds, 0};
  ::setsockopt(socket_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  {
    std::lock_guard lock(mutex_);
    killed_because_.clear();
  }
  ch->send(kind::start, 0, {spec_.start_json});
  frame f;
  std::string error;
  std::string snapshot;
  bool ready = false;
  while (ch->receive(f, error)) {
    if (f.kind == kind::ready) {
      snapshot = std::string(f.at(0));
      ready = true;
      break;
    }
    if (f.kind == kind::log) events_.log(to_int(f.at(0)), f.at(1), f.at(2));
  }
  if (!ready) {
    ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    const std::string how = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && error.empty()
                                ? cat("did not start its plugins within ", kStartSeconds, " s")
                                : describe_end(status);
    return absl::InternalError(cat("the process of plugin ", spec_.name, " ", how,
                                   error.empty() ? "" : cat(" after sending ", error), " before its plugins started"));
  }
  tv = {0, 0};
  ::setsockopt(socket_fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (reader_.joinable()) reader_.join();
  {
    std::lock_guard lock(mutex_);
    channel_ = std::move(ch);
    pid_ = pid;
    running_ = true;
  }
  reader_ = std::thread([this, ch = channel_] { read_frames(ch); });
  log::debug("isolation", cat("plugin ", spec_.name, " runs in process ", pid));
  return snapshot;
}

bool child_process::handle(frame& f, std::string& error) {
  auto find = [this](uint64_t id) -> std::shared_ptr<pending> {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    return it != pending_.end() ? it->second : nullptr;
  };
  switch (f.kind) {
    case kind::result: {
      std::shared_ptr<pending> p;
      {
        std::lock_guard lock(mutex_);
        if (auto it = pending_.find(f.id); it != pending_.end()) {
          p = std::move(it->second);
          pending_.erase(it);
        }
      }
      if (!p) break;
      std::lock_guard lock(p->m);
      p->status = to_int(f.at(0));
      if (f.fields.size() > 1) p->text = std::move(f.fields[1]);
      p->done.store(true, std::memory_order_release);
      p->cv.notify_all();  // costs nothing when its call spins instead of waiting
      break;
    }
    case kind::progress: {
      auto p = find(f.id);
      if (!p || p->context == nullptr) break;
      const std::string message(f.at(2));
      p->context->progress(p->context, std::strtod(std::string(f.at(0)).c_str(), nullptr),
                           std::strtod(std::string(f.at(1)).c_str(), nullptr),
                           f.at(3) == "1" ? message.c_str() : nullptr);
      break;
    }
    case kind::call_log: {
      auto p = find(f.id);
      if (!p || p->context == nullptr) break;
      const std::string logger(f.at(1)), data(f.at(2));
      p->context->log(p->context, to_int(f.at(0)), logger.empty() ? nullptr : logger.c_str(), data.c_str());
      break;
    }
    case kind::ask: {
      auto p = find(f.id);
      if (!p) break;
      std::lock_guard lock(p->m);
      p->questions.push_back(f);
      p->has_questions.store(true, std::memory_order_release);
      p->cv.notify_all();
      break;
    }
    case kind::list_changed: events_.list_changed(f.at(0), static_cast<uint32_t>(to_int(f.at(1)))); break;
    case kind::resource_updated: events_.resource_updated(f.at(0)); break;
    case kind::log: events_.log(to_int(f.at(0)), f.at(1), f.at(2)); break;
    default: error = cat("a frame of unknown kind ", static_cast<int>(f.kind)); return false;
  }
  return true;
}

bool child_process::pump(channel& ch) {
  if (ch.closed()) return false;
  std::string error;
  for (;;) {
    switch (ch.try_receive(pumped_, error)) {
      case channel::poll_result::got:
        if (handle(pumped_, error)) continue;
        ch.shut();  // a child that sends nonsense is ended like one that crashed
        [[fallthrough]];
      case channel::poll_result::closed:
        // The first to read the end marks the channel closed; only it reaches here.
        child_ended(error);
        return false;
      case channel::poll_result::none: return true;
    }
  }
}

void child_process::read_frames(std::shared_ptr<channel> ch) {
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      // While calls read their answers themselves (they spin on the socket, below), the reader
      // keeps off it: in poll() it would be woken by every answer they take, a wasted context
      // switch per call on a busy core. It comes back when a call goes to sleep, or when calls
      // have stopped for kReaderRest (a frame that comes between calls, a log line or a death,
      // waits at most that long).
      for (;;) {
        if (ch->closed() || sleepers_ > 0) break;
        const auto now = std::chrono::steady_clock::now();
        if (spinners_ == 0 && now >= last_spin_ + kReaderRest) break;
        reader_wake_.wait_until(lock, std::max(now, last_spin_) + kReaderRest);
      }
    }
    pollfd p{ch->fd(), POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) {
      ::usleep(1000);  // poll() fails only on resources; do not spin on it
    }
    std::lock_guard lock(read_mutex_);
    if (!pump(*ch)) return;
  }
}

void child_process::child_ended(const std::string& why_bad) {
  const pid_t pid = pid_.load();
  if (!why_bad.empty()) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::map<uint64_t, std::shared_ptr<pending>> lost;
  std::string how;
  {
    std::lock_guard lock(mutex_);
    lost.swap(pending_);
    if (!killed_because_.empty()) {
      how = killed_because_;
    } else if (!why_bad.empty()) {
      how = cat("sent ", why_bad, ", so toolhost stopped its process");
    } else {
      how = describe_end(status);
    }
    last_end_ = how;
    running_ = false;
    pid_ = 0;
    if (!stopping_) {
      ++streak_;
      last_death_ = std::chrono::steady_clock::now();
    }
  }
  if (!stopping_) {
    const uint32_t n = ++crashes_;
    log::error("isolation", cat("the process of plugin ", spec_.name, " (pid ", pid, ") ", how, "; ", lost.size(),
                                " call(s) in flight failed (", n, n == 1 ? " crash" : " crashes",
                                " so far); it starts again for the next call"));
  }
  reader_wake_.notify_all();
  for (auto& [id, p] : lost) {
    std::lock_guard lock(p->m);
    p->status = TOOLHOST_ERR_INTERNAL;
    p->text = cat("The plugin '", p->plugin, "' ", how, " while ", what_ran(p->op, p->name),
                  "; the call is lost, and toolhost starts the plugin again for the next call.");
    p->done.store(true, std::memory_order_release);
    p->cv.notify_all();
  }
}

void child_process::kill_child(std::string why) {
  {
    std::lock_guard lock(mutex_);
    if (!killed_because_.empty()) return;
    killed_because_ = std::move(why);
  }
  if (const pid_t p = pid_.load(); p > 0) ::kill(p, SIGKILL);
}

absl::Status child_process::ensure_running(const toolhost_call_t* context) {
  if (running_) return absl::OkStatus();
  std::lock_guard lock(start_mutex_);
  if (running_) return absl::OkStatus();
  if (stopping_) return absl::UnavailableError("toolhost is shutting down");
  if (reader_.joinable()) reader_.join();
  std::chrono::steady_clock::time_point not_before;
  {
    std::lock_guard l(mutex_);
    if (streak_ >= 2) {
      auto delay = kFirstBackoff * (1u << std::min<uint32_t>(streak_ - 2, 5));
      if (delay > kMaxBackoff) delay = kMaxBackoff;
      not_before = last_death_ + delay;
    }
  }
  while (std::chrono::steady_clock::now() < not_before) {
    if (context != nullptr && context->is_cancelled(context)) return absl::CancelledError("cancelled");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto started = spawn_locked();
  if (!started.ok()) return started.status();
  return absl::OkStatus();
}

toolhost_status_t child_process::call(std::string_view op, std::string_view plugin, std::string_view name,
                                      std::string_view arguments, const toolhost_call_t* context, std::string& out) {
  if (absl::Status s = ensure_running(context); !s.ok()) {
    if (s.code() == absl::StatusCode::kCancelled) return TOOLHOST_ERR_CANCELLED;
    std::string last;
    {
      std::lock_guard lock(mutex_);
      last = last_end_;
    }
    out = cat("The plugin '", plugin, "' could not be started again (", view(s.message()), ")",
              last.empty() ? "" : cat(" after its process ", last), ", so ", what_ran(op, name),
              " never ran; its tools stay unavailable until it starts.");
    return TOOLHOST_ERR_INTERNAL;
  }
  auto p = std::make_shared<pending>();
  p->op = std::string(op);
  p->plugin = std::string(plugin);
  p->name = std::string(name);
  p->context = context;
  for (;;) {
    {
      std::lock_guard lock(mutex_);
      // A child that died since ensure_running() has failed its calls already: this one would
      // wait for an answer forever.
      if (running_) {
        p->id = next_id_++;
        p->ch = channel_;
        pending_.emplace(p->id, p);
        break;
      }
    }
    if (absl::Status s = ensure_running(context); !s.ok()) {
      out = cat("The plugin '", plugin, "' could not be started again (", view(s.message()), "), so ",
                what_ran(op, name), " never ran.");
      return s.code() == absl::StatusCode::kCancelled ? TOOLHOST_ERR_CANCELLED : TOOLHOST_ERR_INTERNAL;
    }
  }
  // A progressToken asks for progress; so does a client that takes tasks (2026-07-28's extension),
  // as a call of it may become a task whose status message is the call's progress.
  const bool wants_progress =
      context != nullptr &&
      (std::string_view(context->meta_json).find("progressToken") != std::string_view::npos ||
       std::string_view(context->client_capabilities_json).find("io.modelcontextprotocol/tasks") !=
           std::string_view::npos);
  const bool sent = p->ch->send(kind::call, p->id,
                                {op, name, arguments, context != nullptr ? context->meta_json : "{}",
                                 context != nullptr ? context->client_capabilities_json : "{}",
                                 context != nullptr ? context->protocol_version : "", wants_progress ? "1" : "0"});
  (void)sent;  // a child that is gone ends the call through the reader, like any death
  if (context != nullptr) context->on_cancel(context, cancel_pending, p.get());
  // The hot path (DESIGN.md): this thread reads the socket for its own answer, so the answer
  // reaches it without waking anyone. Past kSpin it sleeps and the background reader hands it
  // the answer (two wake-ups, which a call that long can afford).
  {
    std::lock_guard lock(mutex_);
    ++spinners_;
  }
  for (const auto until = std::chrono::steady_clock::now() + kSpin;;) {
    if (p->done.load(std::memory_order_acquire) || p->has_questions.load(std::memory_order_acquire)) break;
    if (read_mutex_.try_lock()) {
      pump(*p->ch);
      read_mutex_.unlock();
      if (p->done.load(std::memory_order_acquire)) break;
    }
    if (std::chrono::steady_clock::now() >= until) break;
    sched_yield();
  }
  bool slept = false;
  {
    std::lock_guard lock(mutex_);
    --spinners_;
    last_spin_ = std::chrono::steady_clock::now();
    if (!p->done.load(std::memory_order_acquire)) {
      slept = true;
      ++sleepers_;
      reader_wake_.notify_one();
    }
  }
  bool killed = false;
  // Each question is answered on a thread of its own: a call may ask several at once (each waits
  // for a person), and a 2026-07-28 client must see all of them pending together, as it does when
  // the plugin runs in process. They end before the call returns, since they use its context.
  std::vector<std::thread> answering;
  {
    std::unique_lock lock(p->m);
    while (!p->done) {
      if (!p->questions.empty()) {
        frame q = std::move(p->questions.front());
        p->questions.pop_front();
        lock.unlock();
        answering.emplace_back([this, p, q = std::move(q)] { answer_question(*p, q); });
        lock.lock();
        continue;
      }
      if (p->cancelled_at == std::chrono::steady_clock::time_point{}) {
        p->cv.wait(lock);
        continue;
      }
      const auto kill_at = p->cancelled_at + kCancelGrace;
      if (!killed && std::chrono::steady_clock::now() >= kill_at) {
        killed = true;
        lock.unlock();
        kill_child(cat("was stopped by toolhost because ", what_ran(op, name), " and did not return within ",
                       std::chrono::duration_cast<std::chrono::seconds>(kCancelGrace).count(),
                       " s of being cancelled"));
        lock.lock();
        continue;
      }
      if (killed) {
        p->cv.wait(lock);
      } else {
        p->cv.wait_until(lock, kill_at);
      }
    }
  }
  for (auto& t : answering) t.join();
  if (context != nullptr) context->on_cancel(context, nullptr, nullptr);
  if (p->status == TOOLHOST_OK || slept) {
    std::lock_guard lock(mutex_);
    if (p->status == TOOLHOST_OK) streak_ = 0;
    if (slept) --sleepers_;
  }
  out = std::move(p->text);
  return p->status;
}

void child_process::cancel_pending(void* user_data) {
  auto* p = static_cast<pending*>(user_data);
  {
    std::lock_guard lock(p->m);
    if (p->cancelled_at != std::chrono::steady_clock::time_point{}) return;
    p->cancelled_at = std::chrono::steady_clock::now();
    p->cv.notify_all();
  }
  p->ch->send(kind::cancel, p->id, {});
}

void child_process::answer_question(pending& p, const frame& q) {
  const std::string qid(q.at(0)), method(q.at(1)), params(q.at(2));
  const toolhost_call_t* c = p.context;
  if (method == "confirm_whole_file") {
    const bool ok = c == nullptr || !TOOLHOST_HAS_FIELD(c, toolhost_call_t, confirm_whole_file) ||
                    c->confirm_whole_file == nullptr || c->confirm_whole_file(c, params.c_str());
    p.ch->send(kind::answer, p.id, {qid, ok ? "1" : "0", ""});
    return;
  }
  if (c == nullptr) {
    p.ch->send(kind::answer, p.id, {qid, std::to_string(TOOLHOST_ERR_UNSUPPORTED), ""});
    return;
  }
  sdk::string_writer answer;
  const toolhost_status_t status =
      c->client_request(c, method.c_str(), params.c_str(), static_cast<uint32_t>(to_int(q.at(3))), answer.raw());
  p.ch->send(kind::answer, p.id, {qid, std::to_string(status), answer.text()});
}

void child_process::stop() {
  stopping_ = true;
  std::lock_guard lock(start_mutex_);
  if (running_ && channel_) {
    channel_->send(kind::stop, 0, {});
    for (int i = 0; i < 200 && running_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (running_) kill_child("was stopped by toolhost at shutdown");
  }
  if (reader_.joinable()) reader_.join();
}

uint64_t child_process::resident_kib() const {
  const pid_t p = pid_.load();
  if (p <= 0) return 0;
  std::ifstream in(cat("/proc/", p, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

}  // namespace toolhost::plugins::isolation
