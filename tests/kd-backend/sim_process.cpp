#include "sim_process.h"

#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace kdtest {

sim_process::sim_process(const std::vector<std::string>& extra, const std::string& listen) {
  char templ[] = "/tmp/kd-sim-test-XXXXXX";
  if (::mkdtemp(templ) == nullptr) throw std::runtime_error("mkdtemp failed");
  dir_ = templ;
  socket_ = dir_ + "/kd.sock";
  control_socket_ = dir_ + "/control.sock";
  int out[2];
  if (::pipe(out) != 0) throw std::runtime_error("pipe failed");
  std::vector<std::string> args = {KD_SIM_PATH, "--listen", listen.empty() ? "unix:" + socket_ : listen, "--control",
                                   "unix:" + control_socket_};
  if (listen.rfind("tcp:", 0) == 0) socket_ = "tcp:127.0.0.1:" + listen.substr(4);
  args.insert(args.end(), extra.begin(), extra.end());
  // KD_SIM_ARGS adds simulator options to every run, e.g. heavier faults for a stress run.
  if (const char* more = std::getenv("KD_SIM_ARGS"); more != nullptr) {
    std::istringstream words(more);
    for (std::string w; words >> w;) args.push_back(w);
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(out[1], 1);
    ::close(out[0]);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::_Exit(127);
  }
  ::close(out[1]);
  // Wait for "ready" (bounded), so the sockets exist.
  std::string seen;
  pollfd p{out[0], POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (seen.find('\n') == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    if (::poll(&p, 1, 100) > 0) {
      char b[256];
      const ssize_t n = ::read(out[0], b, sizeof(b));
      if (n <= 0) break;
      seen.append(b, static_cast<size_t>(n));
    }
  }
  ::close(out[0]);
  if (seen.rfind("ready ", 0) != 0) {
    // The destructor does not run for a constructor that throws: clean up here.
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
    throw std::runtime_error("kd-sim did not start: '" + seen + "'");
  }
  if (listen == "pty") socket_ = seen.substr(6, seen.find('\n') - 6);
  control_fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, control_socket_.c_str(), sizeof(a.sun_path) - 1);
  if (::connect(control_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    throw std::runtime_error("cannot connect to the kd-sim control socket");
  }
}

sim_process::~sim_process() {
  if (control_fd_ >= 0) ::close(control_fd_);
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

std::string sim_process::control(const std::string& command) {
  const std::string line = command + "\n";
  if (::write(control_fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) return "error write";
  std::string answer;
  pollfd p{control_fd_, POLLIN, 0};
  while (answer.find('\n') == std::string::npos) {
    if (::poll(&p, 1, 10000) <= 0) return "error timeout";
    char b[4096];
    const ssize_t n = ::read(control_fd_, b, sizeof(b));
    if (n <= 0) return "error closed";
    answer.append(b, static_cast<size_t>(n));
  }
  answer.pop_back();
  return answer;
}

}  // namespace kdtest
