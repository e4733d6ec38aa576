// A loopback HTTP server over a symbol-store folder for the symbol tests: GET /a/b/c answers
// the file ROOT/a/b/c or 404. It logs every request path, and can be made to accept and then
// never answer (a server that hangs). Port 0: the kernel picks one.
#pragma once

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio.hpp>

namespace toolhost::test::windows {

class store_server {
 public:
  explicit store_server(std::string root)
      : root_(std::move(root)), acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
    port_ = acceptor_.local_endpoint().port();
    thread_ = std::thread([this] { serve(); });
  }
  ~store_server() {
    stopping_ = true;
    // A blocking accept is not woken by closing its socket: a last connection ends it.
    boost::system::error_code ec;
    boost::asio::ip::tcp::socket wake(io_);
    wake.connect({boost::asio::ip::make_address("127.0.0.1"), port_}, ec);
    if (thread_.joinable()) thread_.join();
    acceptor_.close(ec);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<std::string> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }
  void clear() {
    std::lock_guard lock(mutex_);
    requests_.clear();
  }
  void hang(bool on) { hang_ = on; }

 private:
  void serve() {
    while (!stopping_) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket socket(io_);
      acceptor_.accept(socket, ec);
      if (ec || stopping_) return;
      std::string request;
      char buffer[4096];
      while (request.find("\r\n\r\n") == std::string::npos) {
        const size_t n = socket.read_some(boost::asio::buffer(buffer), ec);
        if (ec) break;
        request.append(buffer, n);
      }
      const size_t sp1 = request.find(' '), sp2 = request.find(' ', sp1 + 1);
      const std::string path = sp1 == std::string::npos ? "" : request.substr(sp1 + 1, sp2 - sp1 - 1);
      {
        std::lock_guard lock(mutex_);
        requests_.push_back(path);
      }
      if (hang_) {
        hung_.push_back(std::move(socket));  // kept open, never answered
        continue;
      }
      const std::filesystem::path file = std::filesystem::path(root_) / path.substr(1);
      std::string body, status = "404 Not Found";
      if (path.find("..") == std::string::npos && std::filesystem::is_regular_file(file)) {
        std::ifstream in(file, std::ios::binary);
        body.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
        status = "200 OK";
      }
      const std::string head =
          "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
      boost::asio::write(socket, boost::asio::buffer(head), ec);
      boost::asio::write(socket, boost::asio::buffer(body), ec);
      socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
    }
  }

  std::string root_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  uint16_t port_ = 0;
  std::thread thread_;
  std::atomic<bool> stopping_{false}, hang_{false};
  std::mutex mutex_;
  std::vector<std::string> requests_;
  std::vector<boost::asio::ip::tcp::socket> hung_;
};

}  // namespace toolhost::test::windows
