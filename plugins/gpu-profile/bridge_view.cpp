#include "bridge_view.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

namespace toolhost::gpu_profile {
namespace {

constexpr size_t kMaxReply = 1 << 20;

struct fd_guard {
  int fd;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

// A member of an object, or nullptr (HasMember avoids comparing RapidJSON's iterators, which
// C++20 finds ambiguous).
const rapidjson::Value* field(const rapidjson::Value& object, const char* name) {
  return object.IsObject() && object.HasMember(name) ? &object[name] : nullptr;
}

std::string request_line(const std::string& agent, const std::string& chat) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("id"), w.Int(1);
  w.Key("tool"), w.String("current_view");
  w.Key("args"), w.StartObject(), w.EndObject(0);
  w.Key("from"), w.StartObject();
  w.Key("agent"), w.String(agent.c_str());
  w.Key("chat"), w.String(chat.c_str());
  w.EndObject();
  w.EndObject();
  return std::string(buffer.GetString(), buffer.GetSize()) + "\n";
}

}  // namespace

absl::StatusOr<std::string> open_file_from_bridge(const std::string& socket_path, const std::string& agent,
                                                  const std::string& chat, std::chrono::milliseconds timeout) {
  const std::string where = "the Eleven window's bridge (" + socket_path + ")";
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof addr.sun_path)
    return absl::InvalidArgumentError("The bridge socket path is too long: " + socket_path);
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  fd_guard s{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (s.fd < 0) return absl::UnavailableError("Cannot create a socket: " + std::string(std::strerror(errno)));
  if (::connect(s.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return absl::UnavailableError("Cannot reach " + where + ": " + std::strerror(errno) + ". Is the window open?");
  }
  const std::string line = request_line(agent, chat);
  for (size_t sent = 0; sent < line.size();) {
    const ssize_t n = ::send(s.fd, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) return absl::UnavailableError("Cannot write to " + where + ": " + std::strerror(errno));
    sent += static_cast<size_t>(n);
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::string reply;
  while (reply.find('\n') == std::string::npos) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return absl::DeadlineExceededError(where + " did not answer current_view in time");
    pollfd p{s.fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(s.fd, buf, sizeof buf, 0);
    if (n <= 0) return absl::UnavailableError(where + " closed the connection before answering");
    reply.append(buf, static_cast<size_t>(n));
    if (reply.size() > kMaxReply) return absl::DataLossError(where + " sent a reply longer than 1 MiB");
  }
  reply.resize(reply.find('\n'));

  rapidjson::Document doc;
  doc.Parse(reply.c_str(), reply.size());
  if (doc.HasParseError() || !doc.IsObject())
    return absl::DataLossError(where + " answered with something that is not JSON");
  const rapidjson::Value* ok = field(doc, "ok");
  if (ok == nullptr || !ok->IsBool()) return absl::DataLossError(where + " answered without \"ok\"");
  if (!ok->GetBool()) {
    const rapidjson::Value* error = field(doc, "error");
    return absl::FailedPreconditionError(error != nullptr && error->IsString() ? error->GetString()
                                                                               : "The window refused current_view.");
  }
  const rapidjson::Value* text = field(doc, "text");
  if (text == nullptr || !text->IsString()) return absl::DataLossError(where + " answered without \"text\"");
  rapidjson::Document view;
  view.Parse(text->GetString(), text->GetStringLength());
  const rapidjson::Value* file = view.HasParseError() ? nullptr : field(view, "file");
  if (file == nullptr || !file->IsString()) return absl::DataLossError(where + "'s current_view has no \"file\"");
  return std::string(file->GetString(), file->GetStringLength());
}

}  // namespace toolhost::gpu_profile
