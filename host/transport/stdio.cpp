#include "host/transport/stdio.hpp"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>
#include <toolhost/sdk/strings.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include <absl/strings/str_cat.h>

#include "host/log.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"
#include "host/memory.hpp"

namespace toolhost::transport {
namespace {

// One message line may be at most this long; a longer one is answered with a parse error and
// skipped up to its newline, so a runaway writer cannot exhaust memory.
constexpr size_t kMaxLine = 64u << 20;
constexpr auto kLinger = std::chrono::microseconds(200);

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

}  // namespace

int take_stdout() {
  const int fd = ::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
  if (fd < 0) return -1;
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  return fd;
}

int serve_stdio(mcp::server& srv, int protocol_fd, const std::function<bool()>& stop_requested) {
  memory::limit_arenas();
  std::mutex write_mutex;  // one message at a time on stdout
  // Read without write_mutex by the loop below: the mutex's holder may be inside write(),
  // preempted by the very client whose next request the loop has just read, and waiting for it
  // puts the reading thread to sleep and its core to idle (perf showed this as the main futex
  // wait of a design where two threads took turns at reading: 7-10 us from read to answer
  // instead of 4).
  std::atomic<bool> broken{false};
  auto send = [&](mcp::outgoing message) {
    if (message.json.empty()) return;  // "nothing more for this request": stdio needs no marker
    message.json += '\n';
    std::lock_guard lock(write_mutex);
    if (broken.load(std::memory_order_relaxed)) return;
    if (!write_all(protocol_fd, message.json.data(), message.json.size())) {
      broken.store(true, std::memory_order_relaxed);
      ::toolhost::log::warning("stdio", "stdout is closed; stopping");
    }
  };
  auto session = mcp::session::create(srv, send);

  std::string buffer;
  bool skipping = false;  // inside an over-long line
  char chunk[65536];
  bool eof = false;
  while (!eof && !stop_requested() && !broken.load(std::memory_order_relaxed)) {
    pollfd p{STDIN_FILENO, POLLIN, 0};
    int ready = ::poll(&p, 1, 0);
    // Linger briefly before sleeping: a client's next message usually follows our answer within
    // tens of microseconds, and waking a sleeping thread costs more than handling it (see the
    // worker pool's kLinger, which this matches).
    for (const auto until = std::chrono::steady_clock::now() + kLinger;
         ready == 0 && std::chrono::steady_clock::now() < until;) {
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
      eof = true;
      if (!buffer.empty() && !skipping) session->handle(buffer, send);  // a last line without '\n'
      break;
    }
    size_t start = 0;
    for (const char* nl; (nl = static_cast<const char*>(
                              std::memchr(chunk + start, '\n', static_cast<size_t>(n) - start))) != nullptr;) {
      const size_t i = static_cast<size_t>(nl - chunk);
      if (!skipping) {
        buffer.append(chunk + start, i - start);
        if (!buffer.empty() && buffer.back() == '\r') buffer.pop_back();
        if (!buffer.empty()) session->handle(buffer, send);
      }
      buffer.clear();
      skipping = false;
      start = i + 1;
    }
    if (!skipping) buffer.append(chunk + start, static_cast<size_t>(n) - start);
    if (!skipping && buffer.size() > kMaxLine) {
      send({mcp::jsonrpc::error_message(
                "null", mcp::jsonrpc::kParseError,
                cat("Parse error: a message is longer than ", kMaxLine >> 20, " MiB; it is ignored")),
            "", false});
      buffer.clear();
      skipping = true;
    }
  }
  session->close(eof ? 2000 : 5000);
  return 0;
}

}  // namespace toolhost::transport
