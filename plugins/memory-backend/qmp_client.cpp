#include "qmp_client.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <absl/strings/str_format.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace toolhost::memory_backend {
namespace {

std::string to_text(const rapidjson::Value& v) {
  rapidjson::StringBuffer b;
  rapidjson::Writer<rapidjson::StringBuffer> w(b);
  v.Accept(w);
  return {b.GetString(), b.GetSize()};
}

std::string quote(const std::string& s) {
  rapidjson::Value v(s.c_str(), static_cast<rapidjson::SizeType>(s.size()));
  return to_text(v);
}

}  // namespace

absl::StatusOr<qmp_client> qmp_client::connect(const std::string& socket_path, int timeout_ms) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (socket_path.size() >= sizeof addr.sun_path) {
    return absl::InvalidArgumentError(absl::StrFormat("the QMP socket path %s is too long", socket_path));
  }
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(absl::StrFormat("socket: %s", std::strerror(errno)));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    ::close(fd);
    return absl::UnavailableError(absl::StrFormat("cannot connect to QMP at %s: %s", socket_path, std::strerror(e)));
  }
  qmp_client c(fd, timeout_ms);
  absl::StatusOr<std::string> greeting = c.read_line();
  if (!greeting.ok()) return greeting.status();
  if (greeting->find("\"QMP\"") == std::string::npos) {
    return absl::UnavailableError(absl::StrFormat("%s does not speak QMP (no greeting)", socket_path));
  }
  if (absl::StatusOr<std::string> r = c.execute("qmp_capabilities"); !r.ok()) return r.status();
  return c;
}

qmp_client::qmp_client(qmp_client&& other) noexcept
    : fd_(other.fd_), timeout_ms_(other.timeout_ms_), buffer_(std::move(other.buffer_)) {
  other.fd_ = -1;
}

qmp_client::~qmp_client() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<std::string> qmp_client::read_line() {
  for (;;) {
    const size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, timeout_ms_);
    if (ready == 0) return absl::DeadlineExceededError(absl::StrFormat("QMP did not answer within %d ms", timeout_ms_));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrFormat("poll: %s", std::strerror(errno)));
    }
    char chunk[65536];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n == 0) return absl::UnavailableError("QEMU closed the QMP connection");
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrFormat("QMP read: %s", std::strerror(errno)));
    }
    buffer_.append(chunk, static_cast<size_t>(n));
  }
}

absl::StatusOr<std::string> qmp_client::execute(const std::string& command, const std::string& arguments_json) {
  std::string message = "{\"execute\":" + quote(command);
  if (!arguments_json.empty()) message += ",\"arguments\":" + arguments_json;
  message += "}\n";
  for (size_t sent = 0; sent < message.size();) {
    const ssize_t n = ::write(fd_, message.data() + sent, message.size() - sent);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::UnavailableError(absl::StrFormat("QMP write: %s", std::strerror(errno)));
    }
    sent += static_cast<size_t>(n);
  }
  for (;;) {
    absl::StatusOr<std::string> line = read_line();
    if (!line.ok()) return line.status();
    rapidjson::Document d;
    d.Parse(line->c_str(), line->size());
    if (d.HasParseError() || !d.IsObject()) return absl::InternalError("QMP sent something that is not a JSON object");
    if (d.HasMember("event")) continue;
    if (d.HasMember("return")) return to_text(d["return"]);
    if (d.HasMember("error") && d["error"].IsObject() && d["error"].HasMember("desc") &&
        d["error"]["desc"].IsString()) {
      return absl::FailedPreconditionError(
          absl::StrFormat("QEMU refused %s: %s", command, d["error"]["desc"].GetString()));
    }
    return absl::InternalError(absl::StrFormat("QMP answered %s without a return value", command));
  }
}

absl::StatusOr<std::string> qmp_client::human(const std::string& command_line) {
  absl::StatusOr<std::string> r = execute("human-monitor-command", "{\"command-line\":" + quote(command_line) + "}");
  if (!r.ok()) return r;
  rapidjson::Document d;
  d.Parse(r->c_str(), r->size());
  if (d.HasParseError() || !d.IsString()) return absl::InternalError("human-monitor-command returned no text");
  return std::string(d.GetString(), d.GetStringLength());
}

}  // namespace toolhost::memory_backend
