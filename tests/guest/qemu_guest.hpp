// A test helper that boots the test guest (run-qemu) in the background, waits for
// "toolhost-guest: ready", and reads the guest with real gdb through QEMU's gdbstub. Header-only;
// CMake gives TOOLHOST_TEST_GUEST_RUN (the launcher) and TOOLHOST_TEST_GUEST (the image).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace toolhost::test {

class qemu_guest {
 public:
  // `memory`: -m value; `extra`: more run-qemu options.
  explicit qemu_guest(const std::string& memory = "256M", std::vector<std::string> extra = {}) {
    dir_ = "/tmp/toolhost-qemu-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++);
    std::system(("rm -rf " + dir_ + " && mkdir -p " + dir_).c_str());
    std::vector<std::string> args = {TOOLHOST_TEST_GUEST_RUN,
                                     "--image",
                                     TOOLHOST_TEST_GUEST,
                                     "-m",
                                     memory,
                                     "-serial",
                                     serial(),
                                     "-gdb",
                                     gdb_socket(),
                                     "-qmp",
                                     qmp_socket(),
                                     "-pidfile",
                                     dir_ + "/pid",
                                     "-timeout",
                                     "110"};
    args.insert(args.end(), extra.begin(), extra.end());
    launcher_ = ::fork();
    if (launcher_ == 0) {
      std::vector<char*> argv;
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
  }
  ~qemu_guest() {
    if (launcher_ > 0) {
      ::kill(launcher_, SIGTERM);
      ::waitpid(launcher_, nullptr, 0);
    }
    std::system(("rm -rf " + dir_).c_str());
  }
  qemu_guest(const qemu_guest&) = delete;
  qemu_guest& operator=(const qemu_guest&) = delete;

  // Waits (up to `seconds`) until the guest has written its patterns.
  bool wait_ready(int seconds = 30) {
    for (int i = 0; i < seconds * 10; ++i) {
      if (read_file(serial()).find("toolhost-guest: ready") != std::string::npos && qemu_pid() > 0) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  int qemu_pid() const {
    const std::string text = read_file(dir_ + "/pid");
    return text.empty() ? 0 : std::atoi(text.c_str());
  }
  std::string gdb_socket() const { return dir_ + "/gdb.sock"; }
  std::string qmp_socket() const { return dir_ + "/qmp.sock"; }
  std::string serial() const { return dir_ + "/serial"; }
  const std::string& dir() const { return dir_; }

  // Runs gdb against the stub with `commands` (one per -ex) and returns its output.
  std::string gdb(const std::vector<std::string>& commands) const {
    std::string cmd =
        "timeout 60 gdb -batch -nx -ex 'set architecture i386:x86-64' -ex 'target remote " + gdb_socket() + "'";
    for (const std::string& c : commands) cmd += " -ex '" + c + "'";
    cmd += " -ex detach 2>&1";
    std::string out;
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
      ::pclose(p);
    }
    return out;
  }

  // Physical memory [start, start + size) as the gdbstub reads it (Qqemu.PhyMemMode:1).
  std::vector<uint8_t> gdb_physical(uint64_t start, uint64_t size) const {
    const std::string file = dir_ + "/phys.bin";
    std::remove(file.c_str());
    char range[64];
    std::snprintf(range, sizeof range, "0x%llx 0x%llx", static_cast<unsigned long long>(start),
                  static_cast<unsigned long long>(start + size));
    gdb({"maintenance packet Qqemu.PhyMemMode:1", "dump binary memory " + file + " " + range,
         "maintenance packet Qqemu.PhyMemMode:0"});
    const std::string bytes = read_file(file);
    return {bytes.begin(), bytes.end()};
  }

  static std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }

 private:
  static int& counter() {
    static int n = 0;
    return n;
  }
  std::string dir_;
  pid_t launcher_ = -1;
};

}  // namespace toolhost::test
