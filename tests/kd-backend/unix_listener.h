// A listening Unix socket in a fresh folder, for tests that play the target's end of a serial
// line themselves; removed with the object.
#pragma once

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>

namespace kdtest {

class unix_listener {
 public:
  unix_listener() {
    char dir[] = "/tmp/kd-line-XXXXXX";
    REQUIRE(::mkdtemp(dir) != nullptr);
    dir_ = dir;
    path_ = dir_ + "/kd.sock";
    fd_ = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path_.c_str(), sizeof(a.sun_path) - 1);
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(::listen(fd_, 4) == 0);
  }
  ~unix_listener() {
    ::close(fd_);
    ::unlink(path_.c_str());
    ::rmdir(dir_.c_str());
  }
  unix_listener(const unix_listener&) = delete;
  unix_listener& operator=(const unix_listener&) = delete;

  const std::string& path() const { return path_; }
  int fd() const { return fd_; }

 private:
  std::string dir_, path_;
  int fd_ = -1;
};

}  // namespace kdtest
