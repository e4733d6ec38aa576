// toolhost-window: the headless Eleven window for Linux and for the tests.
//
//   toolhost-window serve [BINARY] [--socket PATH] [--project FILE] [--patched-copy FILE]
//                         [--review] [--workbench]
//   toolhost-window history | suggestions | undo | status | close      [--socket PATH]
//   toolhost-window accept N | reject N                                 [--socket PATH]
//   toolhost-window show home|workbench | review on|off                 [--socket PATH]
//   toolhost-window open BINARY [--project FILE]                        [--socket PATH]
//
// `serve` prints ELEVEN_BRIDGE=<socket> on stdout once the sockets listen (a launcher reads
// that line); ELEVEN_AGENT and ELEVEN_CHAT are the launcher's to choose. The other commands talk to a running window
// through its control socket;
// --socket defaults to $ELEVEN_BRIDGE.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "bridge_server.hpp"
#include "window_state.hpp"

namespace {

namespace eleven = toolhost::eleven;

constexpr const char* kUsage =
    "usage:\n"
    "  toolhost-window serve [BINARY] [--socket PATH] [--project FILE] [--patched-copy FILE] [--review] [--workbench]\n"
    "  toolhost-window history | suggestions | undo | status | close   [--socket PATH]\n"
    "  toolhost-window accept N | reject N                              [--socket PATH]\n"
    "  toolhost-window show home|workbench | review on|off              [--socket PATH]\n"
    "  toolhost-window open BINARY [--project FILE]                     [--socket PATH]\n"
    "--socket defaults to $ELEVEN_BRIDGE; serve's default is $XDG_RUNTIME_DIR/eleven/bridge-<pid>.sock\n";

struct options {
  std::string command;
  std::vector<std::string> positional;
  std::string socket, project, patched_copy;
  bool review = false, workbench = false;
};

int usage_error(const std::string& message) {
  std::cerr << "toolhost-window: " << message << "\n" << kUsage;
  return 2;
}

std::optional<options> parse(int argc, char** argv, std::string& error) {
  options o;
  if (argc < 2) {
    error = "no command given";
    return std::nullopt;
  }
  o.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](std::string& into) {
      if (i + 1 >= argc) {
        error = a + " needs a value";
        return false;
      }
      into = argv[++i];
      return true;
    };
    if (a == "--socket") {
      if (!value(o.socket)) return std::nullopt;
    } else if (a == "--project") {
      if (!value(o.project)) return std::nullopt;
    } else if (a == "--patched-copy") {
      if (!value(o.patched_copy)) return std::nullopt;
    } else if (a == "--review")
      o.review = true;
    else if (a == "--workbench")
      o.workbench = true;
    else if (a.rfind("--", 0) == 0) {
      error = "unknown option " + a;
      return std::nullopt;
    } else {
      o.positional.push_back(a);
    }
  }
  return o;
}

std::string default_socket() {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  std::filesystem::path dir;
  if (runtime != nullptr && *runtime != '\0') {
    dir = std::filesystem::path(runtime) / "eleven";
  } else {
    const char* home = std::getenv("HOME");
    dir = std::filesystem::path(home != nullptr ? home : "/tmp") / ".cache" / "eleven";
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, ec);
  return (dir / ("bridge-" + std::to_string(::getpid()) + ".sock")).string();
}

int serve(const options& o) {
  if (o.positional.size() > 1) return usage_error("serve opens at most one binary");
  eleven::window_options wo;
  wo.review = o.review;
  wo.start_on = o.workbench ? eleven::canvas::workbench : eleven::canvas::home;
  wo.patched_copy = o.patched_copy;
  // A signal while the binary is read must still end in run()'s clean exit.
  if (absl::Status s = eleven::bridge_server::catch_stop_signals(); !s.ok()) {
    std::cerr << "toolhost-window: " << s.message() << "\n";
    return 1;
  }
  eleven::window_state window(wo);
  if (!o.positional.empty()) {
    if (absl::Status s = window.open(o.positional[0], o.project); !s.ok()) {
      std::cerr << "toolhost-window: " << s.message() << "\n";
      return 1;
    }
  }
  const std::string socket = o.socket.empty() ? default_socket() : std::filesystem::absolute(o.socket).string();
  eleven::bridge_server server(window, socket);
  if (absl::Status s = server.listen(); !s.ok()) {
    std::cerr << "toolhost-window: " << s.message() << "\n";
    return 1;
  }
  // What an agent launcher exports for `toolhost --server eleven`.
  std::cout << "ELEVEN_BRIDGE=" << socket << std::endl;
  std::cerr << "toolhost-window: listening; start the agent's `toolhost --server eleven` with ELEVEN_BRIDGE=" << socket
            << ", ELEVEN_AGENT=<agent name> and ELEVEN_CHAT=<chat id>\n";
  if (absl::Status s = server.run(); !s.ok()) {
    std::cerr << "toolhost-window: " << s.message() << "\n";
    return 1;
  }
  return 0;
}

// Sends one command over the control socket and prints the answer.
int send_command(const options& o, const std::string& command, const rapidjson::Document& args) {
  std::string socket = o.socket;
  if (socket.empty()) {
    const char* env = std::getenv("ELEVEN_BRIDGE");
    if (env == nullptr || *env == '\0') return usage_error("say which window: --socket PATH, or set ELEVEN_BRIDGE");
    socket = env;
  }
  const std::string control = eleven::control_socket_for(socket).string();
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (control.size() >= sizeof addr.sun_path) return usage_error("the socket path is too long");
  std::memcpy(addr.sun_path, control.data(), control.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    std::cerr << "toolhost-window: no window is listening at " << socket << " (" << std::strerror(errno) << ")\n";
    return 1;
  }
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("id");
  w.Uint(1);
  w.Key("command");
  w.String(command.c_str());
  w.Key("args");
  args.Accept(w);
  w.EndObject();
  std::string line = std::string(buffer.GetString(), buffer.GetSize()) + "\n";
  if (::send(fd, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size())) {
    std::cerr << "toolhost-window: could not send the command\n";
    return 1;
  }
  std::string reply;
  char buf[65536];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 10000) <= 0) {
      std::cerr << "toolhost-window: the window did not answer within 10 s\n";
      return 1;
    }
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    reply.append(buf, static_cast<size_t>(n));
    if (reply.find('\n') != std::string::npos) break;
  }
  ::close(fd);
  rapidjson::Document doc;
  doc.Parse(reply.c_str());
  if (doc.HasParseError() || !doc.IsObject() || !doc.HasMember("ok") || !doc["ok"].IsBool()) {
    std::cerr << "toolhost-window: the window's answer is unreadable\n";
    return 1;
  }
  const bool ok = doc["ok"].GetBool();
  const char* key = ok ? "text" : "error";
  const std::string text = doc.HasMember(key) && doc[key].IsString() ? doc[key].GetString() : "";
  (ok ? std::cout : std::cerr) << text << "\n";
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string error;
  auto o = parse(argc, argv, error);
  if (!o) return usage_error(error);
  if (o->command == "serve") return serve(*o);
  if (o->command == "--help" || o->command == "-h" || o->command == "help") {
    std::cout << kUsage;
    return 0;
  }

  rapidjson::Document args(rapidjson::kObjectType);
  auto& alloc = args.GetAllocator();
  const std::string& c = o->command;
  const size_t n = o->positional.size();
  if (c == "history" || c == "suggestions" || c == "undo" || c == "status" || c == "close") {
    if (n != 0) return usage_error(c + " takes no arguments");
  } else if (c == "accept" || c == "reject") {
    if (n != 1) return usage_error(c + " needs the suggestion's number");
    char* end = nullptr;
    const unsigned long long id = std::strtoull(o->positional[0].c_str(), &end, 10);
    if (end == o->positional[0].c_str() || *end != '\0' || o->positional[0][0] == '-') {
      return usage_error("\"" + o->positional[0] + "\" is not a suggestion number");
    }
    args.AddMember("id", static_cast<uint64_t>(id), alloc);
  } else if (c == "show") {
    if (n != 1 || (o->positional[0] != "home" && o->positional[0] != "workbench")) {
      return usage_error("show needs home or workbench");
    }
    args.AddMember("canvas", rapidjson::Value(o->positional[0].c_str(), alloc), alloc);
  } else if (c == "review") {
    if (n != 1 || (o->positional[0] != "on" && o->positional[0] != "off")) return usage_error("review needs on or off");
    args.AddMember("on", o->positional[0] == "on", alloc);
  } else if (c == "open") {
    if (n != 1) return usage_error("open needs the binary's path");
    const std::string binary = std::filesystem::absolute(o->positional[0]).string();
    args.AddMember("binary", rapidjson::Value(binary.c_str(), alloc), alloc);
    if (!o->project.empty()) {
      const std::string project = std::filesystem::absolute(o->project).string();
      args.AddMember("project", rapidjson::Value(project.c_str(), alloc), alloc);
    }
  } else {
    return usage_error("unknown command " + c);
  }
  return send_command(*o, c, args);
}
