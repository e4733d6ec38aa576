#include "bridge_client.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <absl/status/status.h>
#include <toolhost/sdk/json.hpp>

namespace toolhost::eleven {
namespace {

using clock = std::chrono::steady_clock;
constexpr auto kSlice = std::chrono::milliseconds(50);  // how often a waiting call checks cancellation

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

int remaining_ms(clock::time_point deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
  if (left.count() <= 0) return 0;
  return static_cast<int>(std::min(left, std::chrono::duration_cast<std::chrono::milliseconds>(kSlice)).count());
}

}  // namespace

bridge_options bridge_options_from_environment() {
  bridge_options o;
  o.socket_path = env("ELEVEN_BRIDGE");
  o.agent = env("ELEVEN_AGENT");
  o.chat = env("ELEVEN_CHAT");
  return o;
}

bridge_client::bridge_client(bridge_options options) : options_(std::move(options)) {}

bridge_client::~bridge_client() { disconnect(); }

void bridge_client::disconnect() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

absl::Status bridge_client::ensure_connected(std::string_view tool, clock::time_point deadline) {
  if (fd_ >= 0) {
    // A connection that is readable before we asked anything is one the window closed (it
    // restarted) or wrote garbage on: either way it is no good for this call.
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) == 0) return absl::OkStatus();
    disconnect();
  }
  if (options_.socket_path.empty()) {
    return absl::FailedPreconditionError(
        "No Eleven window is configured: ELEVEN_BRIDGE is not set, so " + std::string(tool) +
        " has no window to talk to (start toolhost-window and pass the socket it prints as ELEVEN_BRIDGE).");
  }
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (options_.socket_path.size() >= sizeof addr.sun_path) {
    return absl::InvalidArgumentError("ELEVEN_BRIDGE is too long for a Unix socket path (" +
                                      std::to_string(options_.socket_path.size()) + " bytes; the limit is " +
                                      std::to_string(sizeof addr.sun_path - 1) + ").");
  }
  std::memcpy(addr.sun_path, options_.socket_path.data(), options_.socket_path.size());
  // Non-blocking: a window that stopped accepting (its backlog full) must not hang the call.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::InternalError(std::string("Cannot create a socket: ") + std::strerror(errno) + ".");
  for (;;) {
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) break;
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EISCONN) break;
    if ((err == EAGAIN || err == EINPROGRESS || err == EALREADY) && clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    ::close(fd);
    if (err == EAGAIN || err == EINPROGRESS || err == EALREADY) {
      return absl::DeadlineExceededError("The Eleven window at " + options_.socket_path +
                                         " did not accept a connection for " + std::string(tool) + " within " +
                                         std::to_string(options_.timeout.count()) + " ms.");
    }
    return absl::UnavailableError("No Eleven window is listening at " + options_.socket_path + " (" +
                                  std::strerror(err) + "); ask the user to open Eleven or start toolhost-window.");
  }
  fd_ = fd;
  return absl::OkStatus();
}

absl::StatusOr<bridge_reply> bridge_client::call(std::string_view tool, std::string_view args_json,
                                                 const std::function<bool()>& cancelled) {
  const auto deadline = clock::now() + options_.timeout;
  const std::string name(tool);
  const auto is_cancelled = [&] { return cancelled && cancelled(); };
  const auto timed_out = [&] {
    return absl::DeadlineExceededError("The Eleven window did not answer " + name + " within " +
                                       std::to_string(options_.timeout.count()) + " ms.");
  };

  std::unique_lock lock(mutex_, std::defer_lock);
  while (!lock.try_lock()) {  // another tool is talking to the window: wait our turn, bounded
    if (clock::now() >= deadline) return timed_out();
    if (is_cancelled()) return absl::CancelledError(name + " was cancelled.");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (absl::Status s = ensure_connected(tool, deadline); !s.ok()) return s;

  const uint64_t id = next_id_++;
  std::string line = R"({"id":)" + std::to_string(id) + R"(,"tool":)" + sdk::quote(tool) + R"(,"args":)" +
                     std::string(args_json) + R"(,"from":{"agent":)" + sdk::quote(options_.agent) + R"(,"chat":)" +
                     sdk::quote(options_.chat) + "}}\n";

  // Send, bounded by the deadline (a window that stopped reading fills the socket buffer).
  size_t sent = 0;
  while (sent < line.size()) {
    if (is_cancelled()) {
      disconnect();
      return absl::CancelledError(name + " was cancelled.");
    }
    pollfd p{fd_, POLLOUT, 0};
    const int wait = remaining_ms(deadline);
    if (wait == 0) {
      disconnect();
      return timed_out();
    }
    if (::poll(&p, 1, wait) <= 0) continue;
    const ssize_t n = ::send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) continue;
      disconnect();
      return absl::UnavailableError("The Eleven window closed the connection before " + name + " could be sent.");
    }
    sent += static_cast<size_t>(n);
  }

  // Receive one line.
  std::string reply;
  char buf[65536];
  for (;;) {
    if (is_cancelled()) {
      disconnect();  // its late answer must not be read as the next call's
      return absl::CancelledError(name + " was cancelled.");
    }
    const int wait = remaining_ms(deadline);
    if (wait == 0) {
      disconnect();
      return timed_out();
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, wait) <= 0) continue;
    const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0) {
      const int err = errno;
      if (err == EAGAIN || err == EINTR) continue;
      disconnect();
      if (err != ECONNRESET && err != EPIPE) {
        return absl::UnavailableError("The Eleven window's connection failed while answering " + name + " (" +
                                      std::strerror(err) + ").");
      }
    }
    if (n <= 0) {  // an orderly close, or a reset: the window went away
      disconnect();
      if (reply.empty())
        return absl::UnavailableError("The Eleven window closed the connection before answering " + name + ".");
      return absl::DataLossError("The Eleven window closed the connection in the middle of its answer to " + name +
                                 " (" + std::to_string(reply.size()) + " bytes without an end of line).");
    }
    const char* newline = static_cast<const char*>(std::memchr(buf, '\n', static_cast<size_t>(n)));
    const size_t take = newline != nullptr ? static_cast<size_t>(newline - buf) : static_cast<size_t>(n);
    if (reply.size() + take > options_.max_reply_bytes) {
      disconnect();
      return absl::ResourceExhaustedError("The Eleven window's answer to " + name + " is longer than " +
                                          std::to_string(options_.max_reply_bytes) + " bytes, so it was dropped.");
    }
    reply.append(buf, take);
    if (newline == nullptr) continue;
    if (static_cast<size_t>(newline - buf) + 1 != static_cast<size_t>(n)) {
      // More than one line for one question: the window is confused; start afresh next time.
      disconnect();
    }
    break;
  }

  std::string problem;
  auto doc = sdk::parse_json(reply, &problem);
  if (!doc || !doc->IsObject()) {
    disconnect();
    return absl::DataLossError("The Eleven window's answer to " + name + " is not a JSON object" +
                               (problem.empty() ? "" : " (" + problem + ")") + ".");
  }
  const rapidjson::Value* rid = sdk::member(*doc, "id");
  if (rid == nullptr || !rid->IsUint64() || rid->GetUint64() != id) {
    disconnect();
    const std::string got = rid == nullptr ? "no id" : "id " + sdk::to_json(*rid);
    return absl::DataLossError("The Eleven window answered " + name + " with " + got + " instead of id " +
                               std::to_string(id) + ", so the answer was dropped.");
  }
  const rapidjson::Value* ok = sdk::member(*doc, "ok");
  if (ok == nullptr || !ok->IsBool()) {
    disconnect();
    return absl::DataLossError("The Eleven window's answer to " + name + " has no true or false \"ok\" field.");
  }
  bridge_reply out;
  out.ok = ok->GetBool();
  const auto text = sdk::string_member(*doc, out.ok ? "text" : "error");
  if (!text) {
    disconnect();
    return absl::DataLossError(std::string("The Eleven window's answer to ") + name + " has no \"" +
                               (out.ok ? "text" : "error") + "\" string.");
  }
  out.text = std::string(*text);
  return out;
}

}  // namespace toolhost::eleven
