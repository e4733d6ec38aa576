#include "connection.hpp"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace toolhost::gdb {

namespace {

using clock = std::chrono::steady_clock;

std::string errno_text() { return std::strerror(errno); }

// TOOLHOST_GDB_TRACE=1 prints every packet to stderr (fd 1 belongs to the MCP protocol).
bool tracing() {
  static const bool on = std::getenv("TOOLHOST_GDB_TRACE") != nullptr;
  return on;
}

void trace(const char* direction, std::string_view payload) {
  if (!tracing()) return;
  // "full" prints whole packets; anything else the first 200 characters.
  static const bool full = std::string_view(std::getenv("TOOLHOST_GDB_TRACE")) == "full";
  const size_t shown = full ? payload.size() : std::min<size_t>(payload.size(), 200);
  std::fprintf(stderr, "gdb %s %.*s\n", direction, static_cast<int>(shown), payload.data());
}

}  // namespace

connection::~connection() { close(); }

void connection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

absl::Status connection::open_unix(std::string_view path, std::chrono::milliseconds timeout) {
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof(sa.sun_path)) return absl::InvalidArgumentError("the socket path is too long");
  std::memcpy(sa.sun_path, path.data(), path.size());
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::InternalError("socket failed: " + errno_text());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0) {
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
      fd_ = fd;
      return absl::OkStatus();
    }
    const std::string why = errno_text();
    ::close(fd);
    // QEMU creates the socket a moment after it starts; wait for it within the timeout.
    if (std::chrono::steady_clock::now() >= deadline) {
      return absl::UnavailableError("cannot connect to " + std::string(path) + ": " + why);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

absl::Status connection::open(std::string_view address, std::chrono::milliseconds timeout) {
  if (address.find('/') != std::string_view::npos) return open_unix(address, timeout);
  std::string host = "127.0.0.1";
  std::string port(address);
  if (const auto colon = address.rfind(':'); colon != std::string_view::npos) {
    if (colon > 0) host = std::string(address.substr(0, colon));
    port = std::string(address.substr(colon + 1));
  }
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos) {
    return absl::InvalidArgumentError("'" + std::string(address) + "' is not host:port (for example 127.0.0.1:1234)");
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::NotFoundError("cannot resolve '" + host + "': " + gai_strerror(rc));
  }
  std::string last_error = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
    if (fd < 0) continue;
    int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = ::poll(&p, 1, static_cast<int>(timeout.count()));
      if (rc == 1) {
        int err = 0;
        socklen_t len = sizeof(err);
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        rc = err == 0 ? 0 : -1;
        errno = err;
      } else {
        rc = -1;
        errno = rc == 0 ? ETIMEDOUT : errno;
      }
    }
    if (rc == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      fd_ = fd;
      freeaddrinfo(found);
      return absl::OkStatus();
    }
    last_error = errno_text();
    ::close(fd);
  }
  freeaddrinfo(found);
  return absl::UnavailableError("cannot connect to " + host + ":" + port + ": " + last_error);
}

absl::Status connection::write_all(std::string_view bytes) {
  std::lock_guard lock(write_mutex_);
  if (fd_ < 0) return absl::FailedPreconditionError("the connection to the stub is closed");
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) {
        pollfd p{fd_, POLLOUT, 0};
        ::poll(&p, 1, 1000);
        continue;
      }
      return absl::UnavailableError("lost the connection to the stub: " + errno_text());
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> connection::pump(std::chrono::milliseconds timeout) {
  if (fd_ < 0) return absl::FailedPreconditionError("the connection to the stub is closed");
  pollfd p{fd_, POLLIN, 0};
  const int rc = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, timeout.count())));
  if (rc < 0 && errno != EINTR) return absl::UnavailableError("poll failed: " + errno_text());
  if (rc <= 0) return false;
  char buffer[65536];
  const ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
  if (n == 0) return absl::UnavailableError("the stub closed the connection");
  if (n < 0) {
    if (errno == EAGAIN || errno == EINTR) return true;
    return absl::UnavailableError("lost the connection to the stub: " + errno_text());
  }
  bytes_in_ += static_cast<uint64_t>(n);
  decoder_.feed(std::string_view(buffer, static_cast<size_t>(n)));
  return true;
}

void connection::drain_decoder() {
  while (decoder_.has_event()) {
    rsp::event e = decoder_.next();
    switch (e.type) {
      case rsp::event::kind::packet:
        if (!no_ack_) (void)write_all("+");
        pending_.push_back(std::move(e.payload));
        break;
      case rsp::event::kind::bad_packet:
        if (!no_ack_) (void)write_all("-");
        break;
      case rsp::event::kind::ack: ++acks_; break;
      case rsp::event::kind::nack: ++nacks_; break;
      case rsp::event::kind::interrupt: break;
    }
  }
}

absl::Status connection::send(std::string_view payload) {
  trace("->", payload);
  const std::string framed = rsp::frame(payload);
  for (int attempt = 0; attempt < 5; ++attempt) {
    acks_ = nacks_ = 0;
    if (auto s = write_all(framed); !s.ok()) return s;
    if (no_ack_) return absl::OkStatus();
    const auto deadline = clock::now() + std::chrono::seconds(5);
    for (;;) {
      drain_decoder();
      if (acks_ > 0) return absl::OkStatus();
      if (nacks_ > 0) break;
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
      if (left.count() <= 0) return absl::DeadlineExceededError("the stub did not acknowledge a packet");
      auto got = pump(left);
      if (!got.ok()) return got.status();
    }
  }
  return absl::DataLossError("the stub rejected a packet five times");
}

absl::Status connection::send_many(const std::string& framed) { return write_all(framed); }

absl::StatusOr<std::string> connection::receive(std::chrono::milliseconds timeout) {
  const auto deadline = clock::now() + timeout;
  for (;;) {
    drain_decoder();
    if (!pending_.empty()) {
      std::string p = std::move(pending_.front());
      pending_.pop_front();
      trace("<-", p);
      return p;
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() < 0) return absl::DeadlineExceededError("no reply from the stub in time");
    auto got = pump(left);
    if (!got.ok()) return got.status();
    if (!*got && clock::now() >= deadline) return absl::DeadlineExceededError("no reply from the stub in time");
  }
}

absl::StatusOr<std::string> connection::request(std::string_view payload, std::chrono::milliseconds timeout) {
  if (auto s = send(payload); !s.ok()) return s;
  return receive(timeout);
}

absl::Status connection::interrupt() { return write_all("\x03"); }

}  // namespace toolhost::gdb
