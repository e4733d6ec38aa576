// Starts tests/kd-sim in a temporary folder and talks to its control channel.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace kdtest {

class sim_process {
 public:
  // Extra arguments go to kd-sim (e.g. {"--drop", "0.1"}). `listen` is kd-sim's --listen
  // ("pty", "tcp:PORT"); empty means a Unix socket in a fresh folder.
  explicit sim_process(const std::vector<std::string>& extra = {}, const std::string& listen = "");
  ~sim_process();
  sim_process(const sim_process&) = delete;
  sim_process& operator=(const sim_process&) = delete;

  // What to pass as `connect`: the socket path, tcp:127.0.0.1:PORT or the pty device.
  const std::string& socket_path() const { return socket_; }
  // Sends one control command and returns its one-line answer.
  std::string control(const std::string& command);

 private:
  std::string dir_;
  std::string socket_;
  std::string control_socket_;
  pid_t pid_ = -1;
  int control_fd_ = -1;
};

}  // namespace kdtest
