#include "toolhost/kdnet/endpoint.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

#include <absl/status/status.h>
#include <absl/strings/str_cat.h>

#include "toolhost/kdnet/crypto.hpp"

namespace toolhost::kdnet {
namespace {

constexpr uint8_t kBreakin = 0x62;
// How long one poll waits at most, so that `close` is noticed promptly.
constexpr std::chrono::milliseconds kPollSlice{100};

absl::Status bad_listen(std::string_view text, std::string_view why) {
  return absl::InvalidArgumentError("Cannot listen for KDNET on \"" + std::string(text) + "\": " + std::string(why) +
                                    ". Give HOST:PORT (default 0.0.0.0:50000) or a port number.");
}

}  // namespace

absl::StatusOr<std::unique_ptr<endpoint>> endpoint::listen(std::string_view text, const control_key& key) {
  std::string host = "0.0.0.0";
  std::string_view port_text = text;
  if (const size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
    if (host.empty()) host = "0.0.0.0";
  }
  uint32_t port = 0;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc() || end != port_text.data() + port_text.size() || port > 65535)
    return bad_listen(text, "the port is not a number from 0 to 65535");

  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string port_string = std::to_string(port);
  if (int rc = getaddrinfo(host.c_str(), port_string.c_str(), &hints, &found); rc != 0) {
    return bad_listen(text, gai_strerror(rc));
  }
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(found, freeaddrinfo);
  int fd = socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return bad_listen(text, std::strerror(errno));
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
    const int err = errno;
    ::close(fd);
    return bad_listen(
        text, absl::StrCat(std::strerror(err), err == EADDRINUSE ? " (another debugger may be listening)" : ""));
  }
  auto ep = std::unique_ptr<endpoint>(new endpoint(fd, key));
  sockaddr_storage local{};
  socklen_t local_size = sizeof(local);
  getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_size);
  ep->local_port_ = ntohs(local.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&local)->sin6_port
                                                      : reinterpret_cast<sockaddr_in*>(&local)->sin_port);
  return ep;
}

endpoint::endpoint(int fd, const control_key& key) : fd_(fd), keys_(key_set::from_control(key.bytes)) {}

endpoint::~endpoint() {
  if (fd_ >= 0) ::close(fd_);
}

std::string endpoint::local_address() const {
  sockaddr_storage local{};
  socklen_t size = sizeof(local);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&local), &size);
  char host[NI_MAXHOST] = "";
  getnameinfo(reinterpret_cast<sockaddr*>(&local), size, host, sizeof(host), nullptr, 0, NI_NUMERICHOST);
  return absl::StrCat(host, ":", local_port_);
}

bool endpoint::keyed() const {
  std::lock_guard lock(mutex_);
  return keys_.data.has_value();
}

endpoint_stats endpoint::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

void endpoint::close() { closed_ = true; }

absl::Status endpoint::send_datagram_locked(const datagram& d) {
  auto bytes = encode_datagram(keys_, d);
  if (!bytes.ok()) return bytes.status();
  if (sendto(fd_, bytes->data(), bytes->size(), 0, reinterpret_cast<const sockaddr*>(&peer_), peer_size_) < 0) {
    return absl::UnavailableError(absl::StrCat("KDNET send failed: ", std::strerror(errno)));
  }
  ++stats_.datagrams_sent;
  return absl::OkStatus();
}

absl::Status endpoint::send(std::span<const uint8_t> kd_packet) {
  std::lock_guard lock(mutex_);
  if (!keys_.data) {
    if (have_peer_) {
      // An empty control datagram makes the target poke again, which lets us key.
      datagram solicit{version_, channel::control, next_sequence_++, true, {}};
      ++stats_.solicitations;
      (void)send_datagram_locked(solicit);
    }
    return absl::FailedPreconditionError("the KDNET target has not completed the handshake yet");
  }
  datagram d{version_, channel::data, next_sequence_++, true, {kd_packet.begin(), kd_packet.end()}};
  return send_datagram_locked(d);
}

absl::Status endpoint::send_breakin() {
  std::lock_guard lock(mutex_);
  if (!keys_.data) {
    breakin_pending_ = true;
    return absl::OkStatus();
  }
  datagram d{version_, channel::data, next_sequence_++, true, {kBreakin}};
  return send_datagram_locked(d);
}

void endpoint::solicit_locked(uint8_t version, const sockaddr_storage& to, socklen_t to_size) {
  // A target keyed by an earlier debugger session talks on a data key we never saw. An empty
  // control datagram makes it poke, and the poke lets us key it. At most twice a second: the
  // sender is not authenticated yet, so this must not become an amplifier.
  const auto now = std::chrono::steady_clock::now();
  if (now - last_solicit_ < std::chrono::milliseconds(500)) return;
  last_solicit_ = now;
  if (!have_peer_) {
    peer_ = to;
    peer_size_ = to_size;
    have_peer_ = true;
    version_ = version;
  }
  datagram solicit{version_, channel::control, next_sequence_++, true, {}};
  ++stats_.solicitations;
  (void)send_datagram_locked(solicit);
}

void endpoint::handle_control(const datagram& d, const sockaddr_storage& from, socklen_t from_size) {
  // Called with mutex_ held.
  if (d.from_host) return;  // our own direction reflected back: ignore
  auto p = parse_poke(d.payload);
  if (!p.ok()) {
    ++stats_.rejected_malformed;
    return;
  }
  if (keys_.data && p->host_port != 0) {
    // A keyed target's keepalive. Answering would make it rekey, so stay silent.
    ++stats_.keepalives;
    return;
  }
  // A zero port: a target without a data channel. If it had used the current key already it has
  // rebooted; otherwise our answer was lost and it asks again.
  const bool rebooted = keys_.data.has_value() && data_since_keyed_;
  std::array<uint8_t, 32> host_random{};
  if (!random_bytes(host_random).ok()) return;
  const std::vector<uint8_t> body = response_body(*p, host_random);
  version_ = d.version;
  peer_ = from;
  peer_size_ = from_size;
  have_peer_ = true;
  datagram reply{version_, channel::control, d.sequence, true, body};
  if (!send_datagram_locked(reply).ok()) return;
  keys_.data = data_key(keys_.control, body);
  data_since_keyed_ = false;
  ++stats_.handshakes;
  if (rebooted) {
    ++stats_.reboots;
    generation_.fetch_add(1);
    pending_.clear();
    pending_.push_back(link_event{link_event::kind::rebooted, {}});
  }
  if (breakin_pending_) {
    breakin_pending_ = false;
    datagram b{version_, channel::data, next_sequence_++, true, {kBreakin}};
    (void)send_datagram_locked(b);
  }
}

absl::StatusOr<bool> endpoint::pump_one(std::chrono::milliseconds wait) {
  pollfd pfd{fd_, POLLIN, 0};
  const int ready = poll(&pfd, 1, static_cast<int>(std::min(wait, kPollSlice).count()));
  if (ready < 0 && errno != EINTR)
    return absl::UnavailableError(absl::StrCat("KDNET poll failed: ", std::strerror(errno)));
  if (ready <= 0) return false;
  uint8_t buffer[65536];
  sockaddr_storage from{};
  socklen_t from_size = sizeof(from);
  const ssize_t n = recvfrom(fd_, buffer, sizeof(buffer), 0, reinterpret_cast<sockaddr*>(&from), &from_size);
  if (n < 0) return true;  // ICMP errors surface here on Linux; the next datagram may be fine
  std::lock_guard lock(mutex_);
  ++stats_.datagrams_received;
  auto d = decode_datagram(keys_, std::span<const uint8_t>(buffer, static_cast<size_t>(n)));
  if (!d.ok()) {
    if (absl::IsUnauthenticated(d.status())) {
      ++stats_.rejected_unauthenticated;
    } else {
      ++stats_.rejected_malformed;
    }
    if (absl::IsFailedPrecondition(d.status())) solicit_locked(buffer[4], from, from_size);
    return true;
  }
  if (d->chan == channel::control) {
    handle_control(*d, from, from_size);
    return true;
  }
  if (d->from_host) return true;
  data_since_keyed_ = true;
  peer_ = from;
  peer_size_ = from_size;
  pending_.push_back(link_event{link_event::kind::packet, std::move(d->payload)});
  return true;
}

absl::Status endpoint::wait_keyed(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!keyed()) {
    if (closed_) return absl::CancelledError("the KDNET link was closed");
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return absl::DeadlineExceededError(
          absl::StrCat("No KDNET target poked within ", timeout.count() / 1000.0, " s on UDP ", local_address(),
                       ". Check that the target runs kdnet with this host's address and port and the same key"));
    }
    if (auto r = pump_one(left); !r.ok()) return r.status();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::optional<link_event>> endpoint::receive(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (bool first = true;; first = false) {
    {
      std::lock_guard lock(mutex_);
      if (!pending_.empty()) {
        link_event e = std::move(pending_.front());
        pending_.pop_front();
        return std::optional<link_event>(std::move(e));
      }
    }
    if (closed_) return absl::CancelledError("the KDNET link was closed");
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0 && !first) return std::optional<link_event>();
    if (auto r = pump_one(std::max(left, std::chrono::milliseconds(0))); !r.ok()) return r.status();
  }
}

}  // namespace toolhost::kdnet
