// The window's sockets: the bridge (agents' tool calls) and the control socket (a person's
// commands from `toolhost-window history`, `accept`, ...). One JSON line in, one JSON line
// out, many clients, one thread.
#pragma once

#include <filesystem>

#include <absl/status/status.h>

#include "window_state.hpp"

namespace toolhost::eleven {

// The control socket sits beside the bridge socket.
std::filesystem::path control_socket_for(const std::filesystem::path& bridge);

class bridge_server {
 public:
  bridge_server(window_state& window, std::filesystem::path bridge_path);
  ~bridge_server();

  // Binds both sockets (mode 0600). Refuses when another window already listens there.
  absl::Status listen();
  // Serves until SIGINT or SIGTERM; then removes the socket files.
  absl::Status run();

 private:
  window_state& window_;
  std::filesystem::path bridge_path_;
  std::filesystem::path control_path_;
  int bridge_fd_ = -1;
  int control_fd_ = -1;
};

}  // namespace toolhost::eleven
