#include "host/transport/http_server.hpp"

#include <toolhost/sdk/strings.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "host/log.hpp"
#include "host/memory.hpp"
#include "host/transport/http_connection.hpp"
#include "host/transport/http_context.hpp"

namespace toolhost::transport::http {

server_context::server_context(const options& o)
    : opts(o),
      guard(o.token, o.allowed_origins, !o.bind.loopback),
      connections(o.max_connections != 0 ? o.max_connections : default_max_connections(current_fd_limit())),
      refused_connections(log::level::warning, "http", std::chrono::seconds(10)),
      accept_failures(log::level::warning, "http", std::chrono::seconds(10)),
      evicted_sessions(log::level::info, "http", std::chrono::seconds(10)),
      refused_sessions(log::level::warning, "http", std::chrono::seconds(10)) {}

void server_context::flush_logs() {
  refused_connections.flush();
  accept_failures.flush();
  evicted_sessions.flush();
  refused_sessions.flush();
}

void close_later(std::shared_ptr<http_session> s, int grace_ms) {
  // A session with nothing running closes at once (an eviction in a flood must not start a
  // thread); one with calls in flight waits for them off the I/O threads.
  if (grace_ms == 0 && !s->active()) return s->close(0);
  std::thread([s = std::move(s), grace_ms] { s->close(grace_ms); }).detach();
}

namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
using tcp = net::ip::tcp;

// asio keeps three things of its own for good once a burst has made them: a reactor state per
// socket (a pool it reuses), the timer queue's heap (a vector that grows with the timers armed at
// once and never shrinks) and the strands' mutexes (193 slots, each allocated the first time a
// strand hashes to it). Made one at a time amid a burst of connections, each of these pins a page
// of the burst's freed memory for good: 2,000 idle connections left the RSS 6 MiB above idle
// before the socket states were reserved, and the timer heap (32 KiB) and the mutexes (~190
// blocks of 40 bytes) scattered through the heap still kept 0.9 MiB. Made together before the
// first connection, they sit in a few contiguous blocks and a burst's memory goes back when it
// ends. `count` is the most sockets (and so timers) the server has open at once.
void reserve_reactor_pools(net::io_context& ioc, size_t count) {
  {
    std::vector<tcp::socket> sockets;
    sockets.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      tcp::socket s(ioc);
      beast::error_code ec;
      s.open(tcp::v4(), ec);
      if (ec) break;
      sockets.push_back(std::move(s));
    }
  }
  {
    std::vector<net::steady_timer> timers;
    timers.reserve(count);
    for (size_t i = 0; i < count; ++i) {
      timers.emplace_back(ioc, std::chrono::hours(1)).async_wait([](beast::error_code) {});
    }
  }  // cancelled: their handlers are queued; poll() below runs them
  // A slot is missed by 4,000 strands with probability (1 - 1/193)^4000, about 1e-9.
  for (int i = 0; i < 4000; ++i) (void)net::make_strand(ioc);
  ioc.poll();
  ioc.restart();
}

// Accepts connections. An accept that fails for want of a resource (descriptors, buffers,
// memory) does not retry at once, which would spin on the same error as long as it lasts: it
// frees a descriptor by closing the longest-waiting connection and backs off, 10 ms doubling up
// to 1 s, logging once per episode.
class listener : public std::enable_shared_from_this<listener> {
 public:
  listener(net::io_context& ioc, tcp::acceptor acceptor, server_context& ctx)
      : ioc_(ioc), acceptor_(std::move(acceptor)), ctx_(ctx), backoff_timer_(ioc) {}

  void accept() {
    acceptor_.async_accept(net::make_strand(ioc_), [self = shared_from_this()](beast::error_code ec,
                                                                               connection_socket s) {
      if (ec == net::error::operation_aborted) return;
      if (!ec) {
        self->backoff_ = std::chrono::milliseconds(0);
        serve_connection(std::move(s), self->ctx_);
        return self->accept();
      }
      if (ec == net::error::connection_aborted || ec == net::error::interrupted || ec == net::error::try_again) {
        return self->accept();  // that one connection's trouble
      }
      self->ctx_.accept_failures.note(cat("cannot accept connections: ", ec.message(), " (",
                                          self->ctx_.connections.size(), " open); pausing accepts"));
      self->ctx_.connections.preempt_one();
      self->backoff_ = std::clamp(self->backoff_ * 2, std::chrono::milliseconds(10), std::chrono::milliseconds(1000));
      self->backoff_timer_.expires_after(self->backoff_);
      self->backoff_timer_.async_wait([self](beast::error_code e) {
        if (!e) self->accept();
      });
    });
  }

 private:
  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  server_context& ctx_;
  net::steady_timer backoff_timer_;
  std::chrono::milliseconds backoff_{0};
};

// The threads that run the I/O. After a burst they are replaced with fresh ones: glibc caches a
// thread's freed blocks for that thread until it exits (tcache), and what the I/O threads cached
// of a burst's connections and sessions, a few blocks of every size scattered over the heap, kept
// ~1 MiB of pages resident after 2,000 connections had gone. Stopping the io_context keeps every
// queued handler for the new threads; the I/O pauses for as long as a thread takes to exit and
// start (well under a millisecond).
class io_threads {
 public:
  io_threads(net::io_context& ioc, unsigned count) : ioc_(ioc), count_(count) { start(); }

  // [any thread] Asks for fresh threads (the main thread makes them: see replace_if_asked).
  void refresh() { refresh_ = true; }

  // [main thread]
  void replace_if_asked() {
    if (!refresh_.exchange(false)) return;
    ioc_.stop();
    join();
    memory::note_release();
    ioc_.restart();
    start();
  }

  // [main thread] After the io_context stopped.
  void join() {
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void start() {
    for (unsigned i = 0; i < count_; ++i) threads_.emplace_back([this] { ioc_.run(); });
  }

  net::io_context& ioc_;
  const unsigned count_;
  std::atomic<bool> refresh_{false};
  std::vector<std::thread> threads_;
};

}  // namespace

int serve(const options& opts, const std::vector<endpoint>& endpoints, const std::function<bool()>& stop_requested) {
  memory::limit_arenas();
  server_context ctx(opts);
  for (const auto& e : endpoints) {
    ctx.endpoints.push_back(std::make_unique<endpoint_state>(e.path, e.server, opts.sessions));
  }
  net::io_context ioc;
  reserve_reactor_pools(ioc, ctx.connections.max() + 64);  // + refusals in flight and the listener
  boost::system::error_code ec;
  const auto address = net::ip::make_address(opts.bind.host, ec);
  tcp::endpoint where(address, opts.bind.port);
  tcp::acceptor acceptor(ioc);
  if (!ec) acceptor.open(where.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(where, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    log::error("http", cat("cannot listen on ", opts.bind.host, ":", opts.bind.port, ": ", ec.message()));
    return 1;
  }
  const unsigned short port = acceptor.local_endpoint().port();
  const std::string base =
      address.is_v6() ? cat("http://[", opts.bind.host, "]:", port) : cat("http://", opts.bind.host, ":", port);
  if (!opts.bind.loopback) {
    log::warning("http", cat("--unsafe-http: listening on a non-loopback address; anyone who can reach ", base,
                             " can use these servers", opts.token.empty() ? ", and no token is set" : ""));
  }
  log::debug("http", cat("at most ", ctx.connections.max(), " connections (descriptor limit ", current_fd_limit(),
                         ") and ", opts.sessions.max_sessions, " sessions per endpoint"));
  for (const auto& e : endpoints) log::info("http", cat("serving '", e.server->name(), "' at ", base, e.path));
  std::make_shared<listener>(ioc, std::move(acceptor), ctx)->accept();

  // Every 2 s: sessions whose time is up end, repeated log lines are summarised, and after a
  // burst of connections or sessions ends, the memory they used goes back to the system (glibc
  // keeps freed heap otherwise, and a flood's peak would stay in the RSS for good).
  unsigned threads = opts.io_threads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 2u, 4u);
  net::steady_timer sweep(ioc);
  io_threads pool(ioc, threads);
  size_t peak_load = 0;
  std::function<void()> arm_sweep = [&] {
    sweep.expires_after(std::chrono::seconds(2));
    sweep.async_wait([&](beast::error_code e) {
      if (e) return;
      size_t load = ctx.connections.size();
      size_t peak = ctx.connections.take_peak();
      for (auto& ep : ctx.endpoints) {
        for (auto& s : ep->sessions.expire()) close_later(s, 0);
        load += ep->sessions.size();
        peak += ep->sessions.take_peak();
      }
      ctx.flush_logs();
      peak_load = std::max(peak_load, peak);
      if (peak_load - load >= 32) {
        memory::note_release();
        pool.refresh();
        peak_load = load;
      }
      memory::trim_if_due();
      arm_sweep();
    });
  };
  arm_sweep();

  while (!stop_requested()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    pool.replace_if_asked();
  }
  ioc.stop();
  pool.join();
  for (auto& ep : ctx.endpoints) {
    for (auto& s : ep->sessions.take_all()) s->close(1000);
  }
  return 0;
}

}  // namespace toolhost::transport::http
