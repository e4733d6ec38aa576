#include "bridge_server.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace toolhost::eleven {
namespace {

constexpr size_t kMaxRequestBytes = 1u << 20;  // no tool's arguments come near this
constexpr size_t kMaxClients = 64;

int g_signal_pipe[2] = {-1, -1};

void on_signal(int) {
  const char c = 's';
  [[maybe_unused]] ssize_t n = ::write(g_signal_pipe[1], &c, 1);
}

absl::Status errno_status(const std::string& what) {
  return absl::UnavailableError(what + ": " + std::strerror(errno));
}

absl::StatusOr<int> listen_on(const std::filesystem::path& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  const std::string p = path.string();
  if (p.size() >= sizeof addr.sun_path) {
    return absl::InvalidArgumentError("The socket path " + p + " is too long for a Unix socket (limit " +
                                      std::to_string(sizeof addr.sun_path - 1) + " bytes).");
  }
  std::memcpy(addr.sun_path, p.data(), p.size());
  // A socket file left by a window that died is removed; a live one is not ours to take.
  if (std::filesystem::exists(path)) {
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const bool alive = probe >= 0 && ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
    if (probe >= 0) ::close(probe);
    if (alive) return absl::AlreadyExistsError("Another window already listens at " + p + ".");
    ::unlink(p.c_str());
  }
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return errno_status("cannot create a socket");
  const mode_t old = ::umask(0177);  // the socket file is created 0600: only this user may drive the window
  const int rc = ::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
  ::umask(old);
  if (rc != 0 || ::listen(fd, 16) != 0) {
    absl::Status s = errno_status("cannot listen at " + p);
    ::close(fd);
    return s;
  }
  return fd;
}

struct client {
  int fd = -1;
  bool control = false;
  std::string in;
  std::string out;
  bool closing = false;  // close once `out` is written
};

std::string reply_line(const rapidjson::Value* id, const answer& a) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("id");
  if (id != nullptr)
    id->Accept(w);
  else
    w.Null();
  w.Key("ok");
  w.Bool(a.ok);
  w.Key(a.ok ? "text" : "error");
  w.String(a.text.data(), static_cast<rapidjson::SizeType>(a.text.size()));
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

std::string string_field(const rapidjson::Value& obj, const char* name) {
  auto it = obj.FindMember(name);
  return it != obj.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
}

std::string handle(window_state& window, bool control, std::string_view line) {
  rapidjson::Document doc;
  doc.Parse(line.data(), line.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    return reply_line(nullptr, answer::refuse("The request is not a JSON object."));
  }
  const rapidjson::Value& root = doc;  // const iterators keep C++20's rewritten != unambiguous
  const rapidjson::Value* id = root.HasMember("id") ? &root["id"] : nullptr;
  static const rapidjson::Value empty_args(rapidjson::kObjectType);
  const rapidjson::Value* args = &empty_args;
  if (auto it = root.FindMember("args"); it != root.MemberEnd()) {
    if (!it->value.IsObject()) return reply_line(id, answer::refuse("\"args\" must be a JSON object."));
    args = &it->value;
  }
  if (control) {
    const std::string command = string_field(root, "command");
    if (command.empty()) return reply_line(id, answer::refuse("The request names no \"command\"."));
    return reply_line(id, window.command(command, *args));
  }
  const std::string tool = string_field(root, "tool");
  if (tool.empty()) return reply_line(id, answer::refuse("The request names no \"tool\"."));
  author from;
  if (auto it = root.FindMember("from"); it != root.MemberEnd() && it->value.IsObject()) {
    from.agent = string_field(it->value, "agent");
    from.chat = string_field(it->value, "chat");
  }
  return reply_line(id, window.call_tool(tool, *args, from));
}

}  // namespace

std::filesystem::path control_socket_for(const std::filesystem::path& bridge) { return bridge.string() + ".control"; }

bridge_server::bridge_server(window_state& window, std::filesystem::path bridge_path)
    : window_(window), bridge_path_(std::move(bridge_path)), control_path_(control_socket_for(bridge_path_)) {}

bridge_server::~bridge_server() {
  for (int fd : {bridge_fd_, control_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

absl::Status bridge_server::listen() {
  auto b = listen_on(bridge_path_);
  if (!b.ok()) return b.status();
  bridge_fd_ = *b;
  auto c = listen_on(control_path_);
  if (!c.ok()) {
    ::unlink(bridge_path_.c_str());
    return c.status();
  }
  control_fd_ = *c;
  return absl::OkStatus();
}

absl::Status bridge_server::catch_stop_signals() {
  if (g_signal_pipe[0] >= 0) return absl::OkStatus();
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return errno_status("cannot create a pipe");
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  return absl::OkStatus();
}

absl::Status bridge_server::run() {
  if (absl::Status s = catch_stop_signals(); !s.ok()) return s;

  std::vector<client> clients;
  for (;;) {
    std::vector<pollfd> fds;
    fds.push_back({g_signal_pipe[0], POLLIN, 0});
    fds.push_back({bridge_fd_, static_cast<short>(clients.size() < kMaxClients ? POLLIN : 0), 0});
    fds.push_back({control_fd_, static_cast<short>(clients.size() < kMaxClients ? POLLIN : 0), 0});
    for (const client& c : clients) {
      fds.push_back({c.fd, static_cast<short>((c.closing ? 0 : POLLIN) | (c.out.empty() ? 0 : POLLOUT)), 0});
    }
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      return errno_status("poll failed");
    }
    if (fds[0].revents != 0) break;
    for (int i : {1, 2}) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      const int fd = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
      if (fd >= 0) clients.push_back({fd, i == 2, {}, {}, false});
    }
    // New clients were appended after the polled ones, so indexes 3.. still line up.
    const size_t polled = fds.size() - 3;
    for (size_t k = 0; k < polled; ++k) {
      client& c = clients[k];
      const short ev = fds[k + 3].revents;
      if ((ev & (POLLIN | POLLHUP | POLLERR)) != 0 && !c.closing) {
        char buf[65536];
        const ssize_t n = ::recv(c.fd, buf, sizeof buf, 0);
        if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR))) {
          c.closing = true;
          c.out.clear();  // the peer is gone
        } else if (n > 0) {
          c.in.append(buf, static_cast<size_t>(n));
          size_t start = 0;
          for (size_t nl; (nl = c.in.find('\n', start)) != std::string::npos; start = nl + 1) {
            c.out += handle(window_, c.control, std::string_view(c.in).substr(start, nl - start));
          }
          c.in.erase(0, start);
          if (c.in.size() > kMaxRequestBytes) {
            c.out += reply_line(nullptr, answer::refuse("The request is longer than 1 MiB."));
            c.in.clear();
            c.closing = true;
          }
        }
      }
      if (!c.out.empty()) {
        const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (n > 0)
          c.out.erase(0, static_cast<size_t>(n));
        else if (n < 0 && errno != EAGAIN && errno != EINTR) {
          c.out.clear();
          c.closing = true;
        }
      }
    }
    std::erase_if(clients, [](const client& c) {
      if (c.closing && c.out.empty()) {
        ::close(c.fd);
        return true;
      }
      return false;
    });
  }
  for (const client& c : clients) ::close(c.fd);
  ::unlink(bridge_path_.c_str());
  ::unlink(control_path_.c_str());
  return absl::OkStatus();
}

}  // namespace toolhost::eleven
