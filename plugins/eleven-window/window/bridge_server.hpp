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

  // From now on SIGINT, SIGTERM and SIGHUP ask run() to stop (at once if it is not serving yet)
  // instead of killing the process, so every exit path closes the window and removes its files
  // (sockets, the project's lock). Call it before opening a binary.
  static absl::Status catch_stop_signals();

  // Binds both sockets (mode 0600). Refuses when another window already listens there.
  absl::Status listen();
  // Serves until SIGINT, SIGTERM or SIGHUP; then removes the socket files.
  absl::Status run();

 private:
  window_state& window_;
  std::filesystem::path bridge_path_;
  std::filesystem::path control_path_;
  int bridge_fd_ = -1;
  int control_fd_ = -1;
};

}  // namespace toolhost::eleven
