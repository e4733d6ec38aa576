#include "gdb_remote.h"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace kdsim {
namespace {

using steady = std::chrono::steady_clock;

std::string framed(const std::string& body) {
  unsigned sum = 0;
  for (unsigned char c : body) sum += c;
  char tail[4];
  std::snprintf(tail, sizeof tail, "#%02x", sum & 0xFF);
  return "$" + body + tail;
}

int connect_unix(const std::string& path, std::string& error) {
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (path.size() >= sizeof(a.sun_path)) {
    error = "kd-sim: the gdbstub socket path '" + path + "' is too long";
    return -1;
  }
  std::strcpy(a.sun_path, path.c_str());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) return fd;
  error = "kd-sim: cannot connect to QEMU's gdbstub at " + path + " (" + std::strerror(errno) +
          "): start QEMU with -gdb unix:" + path + ",server=on,wait=off";
  if (fd >= 0) ::close(fd);
  return -1;
}

int connect_tcp(const std::string& host_port, std::string& error) {
  const size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) {
    error = "kd-sim: --qemu-gdb tcp: needs HOST:PORT, not '" + host_port + "'";
    return -1;
  }
  addrinfo hints{}, *found = nullptr;
  hints.ai_socktype = SOCK_STREAM;
  const std::string host = host_port.substr(0, colon), port = host_port.substr(colon + 1);
  if (::getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0 || found == nullptr) {
    error = "kd-sim: cannot resolve '" + host_port + "'";
    return -1;
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM, 0);
  const bool ok = fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) == 0;
  ::freeaddrinfo(found);
  if (ok) return fd;
  error = "kd-sim: cannot connect to QEMU's gdbstub at " + host_port + " (" + std::strerror(errno) + ")";
  if (fd >= 0) ::close(fd);
  return -1;
}

}  // namespace

std::optional<gdb_remote> gdb_remote::connect(const std::string& spec, std::string& error) {
  const int fd = spec.rfind("tcp:", 0) == 0 ? connect_tcp(spec.substr(4), error)
                                            : connect_unix(spec.rfind("unix:", 0) == 0 ? spec.substr(5) : spec, error);
  if (fd < 0) return std::nullopt;
  gdb_remote g(fd);
  if (auto r = g.request("QStartNoAckMode"); r && *r == "OK") g.acks_ = false;
  if (!g.alive()) {
    error = "kd-sim: QEMU's gdbstub at " + spec + " closed the connection (is another debugger attached?)";
    return std::nullopt;
  }
  return g;
}

gdb_remote::gdb_remote(gdb_remote&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), acks_(other.acks_), in_(std::move(other.in_)) {}

gdb_remote::~gdb_remote() {
  if (fd_ >= 0) ::close(fd_);
}

bool gdb_remote::write_all(const std::string& bytes) {
  size_t done = 0;
  while (fd_ >= 0 && done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      ::close(fd_);
      fd_ = -1;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return fd_ >= 0;
}

bool gdb_remote::send(const std::string& packet) { return write_all(framed(packet)); }

void gdb_remote::interrupt() { write_all(std::string(1, '\x03')); }

// A whole packet from the input, with its escapes undone; acknowledged while acks are on.
std::optional<std::string> gdb_remote::take_packet() {
  for (;;) {
    const size_t start = in_.find('$');
    if (start == std::string::npos) {
      in_.clear();  // '+', '-' and noise between packets
      return std::nullopt;
    }
    const size_t hash = in_.find('#', start);
    if (hash == std::string::npos || hash + 3 > in_.size()) {
      in_.erase(0, start);
      return std::nullopt;
    }
    const std::string body = in_.substr(start + 1, hash - start - 1);
    in_.erase(0, hash + 3);
    if (acks_) write_all("+");
    std::string out;
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] == '}' && i + 1 < body.size()) {
        out += static_cast<char>(body[++i] ^ 0x20);
      } else if (body[i] == '*' && i + 1 < body.size() && !out.empty()) {
        out.append(static_cast<size_t>(static_cast<unsigned char>(body[++i]) - 29), out.back());  // run length
      } else {
        out += body[i];
      }
    }
    return out;
  }
}

std::optional<std::string> gdb_remote::receive(std::chrono::milliseconds timeout) {
  const auto deadline = steady::now() + timeout;
  for (;;) {
    if (auto p = take_packet()) return p;
    if (fd_ < 0) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now()).count();
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::max<long>(0, left)));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return std::nullopt;
    char chunk[8192];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n <= 0) {
      ::close(fd_);
      fd_ = -1;
      return std::nullopt;
    }
    in_.append(chunk, static_cast<size_t>(n));
  }
}

// QEMU sends a stop reply of its own when a debugger connects (it stops the VM then), so a
// stop reply that comes for anything but '?' is an old one and is passed over: no other reply
// starts with 'T' or 'S'.
std::optional<std::string> gdb_remote::request(const std::string& packet, std::chrono::milliseconds timeout) {
  if (!send(packet)) return std::nullopt;
  const auto deadline = steady::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
    auto reply = receive(std::max(left, std::chrono::milliseconds(0)));
    if (!reply || packet == "?" || reply->empty() || ((*reply)[0] != 'T' && (*reply)[0] != 'S')) return reply;
  }
}

}  // namespace kdsim
