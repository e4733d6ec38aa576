#include "toolhost/kd/byte_stream.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include <absl/strings/numbers.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_format.h>

namespace toolhost::kd {
namespace {

using clock = std::chrono::steady_clock;

// A line that takes no byte for this long is dead (at 115200 baud a whole packet leaves in a
// third of a second); a shorter attach wait bounds it too, so an attach ends when it was told to.
constexpr std::chrono::milliseconds kWriteStallMax{10000};
constexpr std::chrono::milliseconds kWriteStallMin{1000};

std::string errno_text() { return std::strerror(errno); }

absl::StatusOr<int> connect_unix(const std::string& path, std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  if (path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(absl::StrCat("The socket path '", path, "' is too long."));
  }
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  const auto started = clock::now();
  const auto deadline = started + timeout;
  while (true) {
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return absl::InternalError("socket(): " + errno_text());
    if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    const int err = errno;
    ::close(fd);
    // The VM may still be starting: retry a missing or refusing socket until the deadline.
    if ((err != ENOENT && err != ECONNREFUSED) || clock::now() >= deadline) {
      const bool waited = err == ENOENT || err == ECONNREFUSED;
      return absl::UnavailableError(absl::StrCat(
          waited ? "Nothing was listening on the KD socket '" : "Cannot connect to the KD socket '", path, "' (",
          std::strerror(err),
          waited ? absl::StrFormat(") in %.1f s", std::chrono::duration<double>(clock::now() - started).count()) : ")",
          ": start QEMU with -chardev socket,id=kd,path=", path,
          ",server=on,wait=off -serial chardev:kd, or give another path in `connect`."));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

absl::StatusOr<int> connect_tcp(std::string_view spec, std::chrono::milliseconds timeout) {
  const size_t colon = spec.rfind(':');
  uint32_t port = 0;
  const std::string text(spec);
  if (colon == std::string_view::npos || !absl::SimpleAtoi(text.substr(colon + 1), &port) || port == 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("'tcp:", text, "' is not a TCP address; write tcp:HOST:PORT, e.g. tcp:127.0.0.1:4445."));
  }
  std::string host(spec.substr(0, colon));
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found); rc != 0) {
    return absl::UnavailableError(absl::StrCat("Cannot resolve '", host, "': ", gai_strerror(rc), "."));
  }
  const auto deadline = clock::now() + timeout;
  std::string last = "no address";
  while (true) {
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        int one = 1;
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        ::freeaddrinfo(found);
        return fd;
      }
      last = errno_text();
      ::close(fd);
    }
    if (clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::freeaddrinfo(found);
  return absl::UnavailableError(absl::StrFormat(
      "Nothing accepted a connection on tcp:%s in %.1f s (%s): check the host and port of the target's serial line.",
      text, std::chrono::duration<double>(timeout).count(), last));
}

absl::StatusOr<int> open_serial(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (fd < 0)
    return absl::UnavailableError(absl::StrCat("Cannot open the serial device '", path, "': ", errno_text(), "."));
  termios tio{};
  if (::tcgetattr(fd, &tio) == 0) {
    ::cfmakeraw(&tio);
    ::cfsetispeed(&tio, B115200);
    ::cfsetospeed(&tio, B115200);
    tio.c_cflag |= CLOCAL | CREAD;
    tio.c_cflag &= ~(CSTOPB | PARENB | CRTSCTS);
    ::tcsetattr(fd, TCSANOW, &tio);
  }
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<byte_stream>> byte_stream::open(std::string_view connect,
                                                               std::chrono::milliseconds timeout) {
  if (connect.empty())
    return absl::InvalidArgumentError(
        "`connect` is empty; give a socket path, unix:PATH, tcp:HOST:PORT or a serial device.");
  absl::StatusOr<int> fd;
  bool serial = false;
  std::string name(connect);
  if (name.rfind("tcp:", 0) == 0) {
    fd = connect_tcp(connect.substr(4), timeout);
  } else if (name.rfind("unix:", 0) == 0) {
    fd = connect_unix(std::string(connect.substr(5)), timeout);
  } else {
    const std::string path(connect);
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
      fd = open_serial(path);
      serial = true;
    } else {
      fd = connect_unix(path, timeout);
      name = "unix:" + path;
    }
  }
  if (!fd.ok()) return fd.status();
  auto stream = std::unique_ptr<byte_stream>(new byte_stream(*fd, std::move(name)));
  stream->serial_ = serial;
  stream->write_stall_ = std::clamp(timeout, kWriteStallMin, kWriteStallMax);
  return stream;
}

byte_stream::byte_stream(int fd, std::string name) : fd_(fd), name_(std::move(name)) {
  if (::pipe2(wake_, O_CLOEXEC | O_NONBLOCK) != 0) wake_[0] = wake_[1] = -1;
}

byte_stream::~byte_stream() {
  if (fd_ >= 0) ::close(fd_);
  if (wake_[0] >= 0) ::close(wake_[0]);
  if (wake_[1] >= 0) ::close(wake_[1]);
}

absl::StatusOr<size_t> byte_stream::read_some(std::span<uint8_t> into, std::chrono::milliseconds timeout) {
  pollfd fds[2] = {{fd_, POLLIN, 0}, {wake_[0], POLLIN, 0}};
  const int rc = ::poll(fds, wake_[0] >= 0 ? 2 : 1, static_cast<int>(timeout.count()));
  if (rc < 0) {
    if (errno == EINTR) return 0;
    return absl::UnavailableError("poll(): " + errno_text());
  }
  if (rc == 0) return 0;
  if (fds[1].revents != 0) return absl::UnavailableError("The KD connection was closed.");
  const ssize_t n = ::read(fd_, into.data(), into.size());
  if (n > 0) return static_cast<size_t>(n);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  return absl::UnavailableError(absl::StrCat("The KD peer at ", name_, " closed the connection."));
}

absl::Status byte_stream::write_all(std::span<const uint8_t> bytes) {
  std::lock_guard lock(write_mutex_);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // A peer that stops reading (a hung target, or one itself blocked writing to us while we
      // write, since we read only between writes) must not block us for good.
      pollfd p{fd_, POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(write_stall_.count())) == 0) {
        return absl::DeadlineExceededError(
            absl::StrFormat("%s has not taken a byte for %.1f s: the target stopped reading the line.", name_,
                            std::chrono::duration<double>(write_stall_).count()));
      }
      continue;
    }
    if (n < 0 && errno == ENOTSOCK) {
      const ssize_t w = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (w > 0) {
        done += static_cast<size_t>(w);
        continue;
      }
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrCat("Writing to ", name_, " failed: ", errno_text(), "."));
    }
    done += static_cast<size_t>(n);
  }
  // At 115200 baud a full packet takes a third of a second on the wire: wait until it left, so
  // that the ACK timeout counts from the end of the transmission.
  if (serial_) ::tcdrain(fd_);
  return absl::OkStatus();
}

void byte_stream::shutdown() {
  if (wake_[1] >= 0) {
    const char b = 1;
    [[maybe_unused]] auto n = ::write(wake_[1], &b, 1);
  }
}

}  // namespace toolhost::kd
