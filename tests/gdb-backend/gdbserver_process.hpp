// Test helper: runs a program under a real gdbserver on a free loopback port.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace toolhost::testing {

class gdbserver_process {
 public:
  // Starts `gdbserver --once 127.0.0.1:0 program args...`; the program's stdout goes to a file.
  explicit gdbserver_process(const std::string& program, std::vector<std::string> args = {}) {
    char out_template[] = "/tmp/toolhost-gdbserver-out-XXXXXX";
    const int out_fd = mkstemp(out_template);
    output_path_ = out_template;
    int err_pipe[2];
    if (pipe(err_pipe) != 0) throw std::runtime_error("pipe failed");
    pid_ = fork();
    if (pid_ == 0) {
      dup2(out_fd, 1);
      dup2(err_pipe[1], 2);
      close(err_pipe[0]);
      std::vector<std::string> argv_s = {"gdbserver", "--once", "127.0.0.1:0", program};
      argv_s.insert(argv_s.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (auto& a : argv_s) argv.push_back(a.data());
      argv.push_back(nullptr);
      execvp("gdbserver", argv.data());
      _exit(127);
    }
    close(out_fd);
    close(err_pipe[1]);
    err_fd_ = err_pipe[0];
    // gdbserver says "Listening on port N" on stderr once it is ready.
    std::string text;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      char buffer[256];
      const ssize_t n = read(err_fd_, buffer, sizeof(buffer));
      if (n <= 0) break;
      text.append(buffer, static_cast<size_t>(n));
      if (const size_t created = text.find("pid = "); created != std::string::npos && inferior_ == 0) {
        inferior_ = std::atoi(text.c_str() + created + 6);
      }
      const size_t at = text.find("Listening on port ");
      if (at != std::string::npos && text.find('\n', at) != std::string::npos) {
        port_ = std::stoi(text.substr(at + 18));
        break;
      }
    }
    if (port_ == 0) throw std::runtime_error("gdbserver did not start: " + text);
    fcntl(err_fd_, F_SETFL, O_NONBLOCK);
  }
  ~gdbserver_process() {
    // A detached debuggee runs on without gdbserver; it belongs to the test, so it goes too.
    if (inferior_ > 0) kill(inferior_, SIGKILL);
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (err_fd_ >= 0) close(err_fd_);
    unlink(output_path_.c_str());
  }
  int port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  // What the debugged program printed so far.
  std::string program_output() const {
    std::ifstream in(output_path_);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // Waits up to `ms` for the program output to contain `text`.
  bool wait_for_output(const std::string& text, int ms = 5000) const {
    for (int i = 0; i < ms / 20; ++i) {
      if (program_output().find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return program_output().find(text) != std::string::npos;
  }

 private:
  pid_t pid_ = -1;
  pid_t inferior_ = 0;
  int err_fd_ = -1;
  int port_ = 0;
  std::string output_path_;
};

}  // namespace toolhost::testing
