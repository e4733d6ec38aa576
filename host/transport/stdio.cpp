#include "host/transport/stdio.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <toolhost/sdk/strings.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <absl/strings/str_cat.h>

#include "host/log.hpp"
#include "host/mcp/inline_runner.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"
#include "host/memory.hpp"

namespace toolhost::transport {
namespace {

using clock_type = std::chrono::steady_clock;

// One message line may be at most this long; a longer one is answered with a parse error and
// skipped up to its newline, so a runaway writer cannot exhaust memory.
constexpr size_t kMaxLine = 64u << 20;
// Before it sleeps, the reading thread watches stdin this long: a client's next message usually
// follows our answer within tens of microseconds, and waking a sleeping thread costs more than
// handling it (the worker pool's kLinger, which this matches).
constexpr auto kLinger = std::chrono::microseconds(200);
// A call the reading thread runs itself for longer than this gets a new reading thread: so a
// message that comes meanwhile (a cancellation, the client's answer to a question the call asked)
// waits at most about twice this. Quick calls, nearly all, end long before.
constexpr auto kTakeOver = std::chrono::milliseconds(2);
// After a call on the reading thread, the watcher looks every kTakeOver for this long; then it
// sleeps until the next such call wakes it (200 ms at most, to see a stop asked for).
constexpr auto kWatchful = std::chrono::milliseconds(100);
constexpr auto kIdleWake = std::chrono::milliseconds(200);

bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// The two sides of a stdio session: one thread at a time reads stdin and handles what it reads,
// running a request's work itself when nothing else waits to be read (mcp::inline_runner); the
// thread that called serve_stdio watches, and when such work runs past kTakeOver it starts a new
// reading thread, which reads on from where the first stopped, and the first ends with its work.
// The watcher runs no plugin code, so it can always close the session at the end, even with a
// call that never returns. The reading state (unread_, line_, skipping_, eof_) belongs to the
// reading thread; a new reading thread gets it through mutex_ (begin_inline, take_over).
class stdio_reader : public mcp::inline_runner, public std::enable_shared_from_this<stdio_reader> {
 public:
  stdio_reader(mcp::server& srv, int protocol_fd, std::function<bool()> stop_requested)
      : srv_(srv), protocol_fd_(protocol_fd), stop_requested_(std::move(stop_requested)) {}

  void start() {
    std::weak_ptr<stdio_reader> weak = weak_from_this();
    session_ = mcp::session::create(srv_, [weak](mcp::outgoing m) {
      if (auto self = weak.lock()) self->send(std::move(m));
    });
    start_reader();
  }

  // On the thread that called serve_stdio: watches the reading thread's calls until the reading
  // ends (end of input, a broken stdout, a stop asked for), then closes the session.
  int watch_and_close() {
    std::unique_lock lock(mutex_);
    auto last_inline = clock_type::now() - kWatchful;
    while (!done_) {
      const auto now = clock_type::now();
      if (inline_active_) {
        last_inline = now;
        if (now - inline_since_ >= kTakeOver) {
          take_over_locked();
          continue;
        }
        cv_.wait_until(lock, inline_since_ + kTakeOver);
        continue;
      }
      watcher_asleep_ = now - last_inline >= kWatchful;
      cv_.wait_for(lock, watcher_asleep_ ? kIdleWake : kTakeOver);
      watcher_asleep_ = false;
    }
    lock.unlock();
    session_->close(eof_ ? 2000 : 5000);
    return 0;
  }

  bool begin_inline() override {
    if (handling_.load() != std::this_thread::get_id()) return false;  // not the reading thread now
    // More messages read already: the work goes to the workers and the reading goes on, so a
    // client that sends several requests at once has them run side by side.
    if (unread_.find('\n') != std::string::npos) return false;
    handling_.store(std::thread::id());  // one call at a time, and none from within it
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      inline_active_ = true;
      inline_since_ = clock_type::now();
      wake = watcher_asleep_;
    }
    if (wake) cv_.notify_all();
    return true;
  }

  void end_inline() override {
    std::lock_guard lock(mutex_);
    inline_active_ = false;  // already so if the watcher took the reading over
  }

 private:
  void start_reader() {
    std::shared_ptr<stdio_reader> self = shared_from_this();
    std::thread([self] { self->read(); }).detach();  // one that never returns must not keep the process
  }

  // The watcher's move: a new thread reads on; the old one ends when its call does.
  void take_over_locked() {
    inline_active_ = false;
    ++turn_;
    start_reader();
  }

  // Reads and handles messages until the reading ends or passes to another thread.
  void read() {
    const uint64_t turn = turn_.load();
    char chunk[65536];
    while (!stop_requested_() && !broken()) {
      if (handle_lines(turn)) return;  // the lines read already first: another thread may have read them
      pollfd p{STDIN_FILENO, POLLIN, 0};
      int ready = ::poll(&p, 1, 0);
      for (const auto until = clock_type::now() + kLinger; ready == 0 && clock_type::now() < until;) {
        std::this_thread::yield();
        ready = ::poll(&p, 1, 0);
      }
      if (ready == 0) ready = ::poll(&p, 1, 200);
      if (ready < 0 && errno != EINTR) break;
      if (ready == 0) memory::trim_if_due();  // 200 ms without input: a quiet moment
      if (ready <= 0) continue;
      const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof chunk);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN) continue;
        break;
      }
      if (n == 0) {
        eof_ = true;
        if (!line_.empty() && !skipping_) session_->handle(line_, reply_);  // a last line without '\n'
        break;
      }
      unread_.append(chunk, static_cast<size_t>(n));
    }
    std::lock_guard lock(mutex_);
    done_ = true;
    cv_.notify_all();
  }

  // Handles the complete lines read so far; true when, while this thread ran a call, the reading
  // passed to another thread (the rest is that thread's, and nothing here is this one's to touch).
  bool handle_lines(uint64_t turn) {
    size_t start = 0;
    for (size_t nl; (nl = unread_.find('\n', start)) != std::string::npos;) {
      if (!skipping_) {
        line_.append(unread_, start, nl - start);
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
      }
      start = nl + 1;
      const bool skipped = skipping_;
      skipping_ = false;
      if (skipped || line_.empty()) continue;
      const std::string message = std::move(line_);
      line_.clear();
      unread_.erase(0, start);  // a new reading thread starts after this line
      start = 0;
      handling_.store(std::this_thread::get_id());
      session_->handle(message, reply_, {}, shared_from_this());
      if (turn_.load() != turn) return true;
      handling_.store(std::thread::id());
    }
    if (!skipping_) line_.append(unread_, start, std::string::npos);
    unread_.clear();
    if (!skipping_ && line_.size() > kMaxLine) {
      send({mcp::jsonrpc::error_message(
                "null", mcp::jsonrpc::kParseError,
                cat("Parse error: a message is longer than ", kMaxLine >> 20, " MiB; it is ignored")),
            "", false});
      line_.clear();
      skipping_ = true;
    }
    return false;
  }

  void send(mcp::outgoing message) {
    if (message.json.empty()) return;  // "nothing more for this request": stdio needs no marker
    message.json += '\n';
    std::lock_guard lock(write_mutex_);
    if (broken_) return;
    if (!write_all(protocol_fd_, message.json.data(), message.json.size())) {
      broken_ = true;
      ::toolhost::log::warning("stdio", "stdout is closed; stopping");
    }
  }

  bool broken() {
    std::lock_guard lock(write_mutex_);
    return broken_;
  }

  mcp::server& srv_;
  const int protocol_fd_;
  const std::function<bool()> stop_requested_;
  std::shared_ptr<mcp::session> session_;
  const mcp::sink reply_ = [this](mcp::outgoing m) { send(std::move(m)); };

  std::atomic<uint64_t> turn_{0};            // how many times a new thread took the reading over
  std::atomic<std::thread::id> handling_{};  // the reading thread, while it handles a message
  std::string unread_;                       // read from stdin, not yet handled
  std::string line_;                         // the line being gathered
  bool skipping_ = false;                    // inside an over-long line
  bool eof_ = false;

  std::mutex mutex_;
  std::condition_variable cv_;
  bool inline_active_ = false;  // the reading thread runs a call
  clock_type::time_point inline_since_;
  bool watcher_asleep_ = false;  // the watcher waits up to kIdleWake: a call must wake it
  bool done_ = false;

  std::mutex write_mutex_;
  bool broken_ = false;
};

}  // namespace

int take_stdout() {
  const int fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return -1;
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  return fd;
}

int serve_stdio(mcp::server& srv, int protocol_fd, const std::function<bool()>& stop_requested) {
  memory::limit_arenas();
  auto reader = std::make_shared<stdio_reader>(srv, protocol_fd, stop_requested);
  reader->start();
  return reader->watch_and_close();
}

}  // namespace toolhost::transport
