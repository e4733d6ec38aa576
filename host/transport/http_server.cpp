#include "host/transport/http_server.hpp"

#include <toolhost/sdk/strings.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <memory>
#include <optional>
#include <thread>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "host/log.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"
#include "host/transport/http_session.hpp"
#include "host/transport/http_stream.hpp"

namespace toolhost::transport::http {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

struct endpoint_state {
  endpoint_state(std::string p, mcp::server* s, size_t max_sessions)
      : path(std::move(p)), server(s), sessions(max_sessions) {}
  std::string path;
  mcp::server* server;
  session_registry sessions;
};

struct shared_state {
  options opts;
  request_guard guard;
  std::vector<std::unique_ptr<endpoint_state>> endpoints;
};

std::string error_body(std::string_view message, int code = -32000) {
  return mcp::jsonrpc::error_message("null", code, message);
}

bool header_has(std::string_view value, std::string_view token) {
  return value.find(token) != std::string_view::npos;
}

bool version_supported(std::string_view v) {
  return std::any_of(std::begin(mcp::kSupportedVersions), std::end(mcp::kSupportedVersions),
                     [v](const char* s) { return v == s; });
}

std::string_view sv(beast::string_view v) { return std::string_view(v.data(), v.size()); }

std::string chunk(std::string_view data) {
  char size[20];
  auto [end, ec] = std::to_chars(size, size + sizeof size, data.size(), 16);
  std::string out(size, end);
  out += "\r\n";
  out += data;
  out += "\r\n";
  return out;
}

// Closes a session off the I/O threads: closing waits briefly for running calls.
void close_later(std::shared_ptr<http_session> s, int grace_ms) {
  std::thread([s = std::move(s), grace_ms] { s->close(grace_ms); }).detach();
}

class connection : public std::enable_shared_from_this<connection> {
 public:
  connection(tcp::socket&& socket, shared_state& state)
      : socket_(std::move(socket)), state_(state), timer_(socket_.get_executor()) {}

  void start() {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] { self->read_header(); });
  }

 private:
  enum class mode { none, pending, sse };

  // ---- Reading -----------------------------------------------------------------------------

  void read_header() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(state_.opts.max_body_bytes);
    socket_.expires_after(state_.opts.idle_timeout);
    bhttp::async_read_header(socket_, buffer_, *parser_,
                             beast::bind_front_handler(&connection::on_header, shared_from_this()));
  }

  void on_header(beast::error_code ec, size_t) {
    if (ec) return on_read_error(ec);
    // From the first byte of the headers on, the whole body must arrive in time: a client that
    // trickles its body ties up only its own connection, and only for this long.
    socket_.expires_after(state_.opts.body_timeout);
    bhttp::async_read(socket_, buffer_, *parser_, beast::bind_front_handler(&connection::on_body, shared_from_this()));
  }

  void on_body(beast::error_code ec, size_t) {
    if (ec) return on_read_error(ec);
    socket_.expires_never();
    handle(parser_->release());
  }

  void on_read_error(beast::error_code ec) {
    if (ec == bhttp::error::body_limit) {
      keep_alive_ = false;
      return reply(bhttp::status::payload_too_large,
                   error_body(cat("Payload Too Large: a message may be at most ", state_.opts.max_body_bytes,
                                  " bytes")));
    }
    if (ec == bhttp::error::header_limit) {
      keep_alive_ = false;
      return reply(bhttp::status::request_header_fields_too_large, error_body("Request headers too large"));
    }
    close();
  }

  // ---- Requests ----------------------------------------------------------------------------

  void handle(bhttp::request<bhttp::string_body> req) {
    keep_alive_ = req.keep_alive();
    version_ = req.version();
    session_header_.clear();
    const std::string_view host = sv(req[bhttp::field::host]);
    const std::string_view origin = sv(req[bhttp::field::origin]);
    if (!state_.guard.host_allowed(host)) {
      return reply(bhttp::status::forbidden,
                   error_body(cat("Forbidden: Host '", host, "' is not this server (DNS rebinding protection)")));
    }
    if (!state_.guard.origin_allowed(origin)) {
      return reply(bhttp::status::forbidden, error_body(cat("Forbidden: Origin '", origin, "' is not allowed")));
    }
    if (!state_.guard.authorized(sv(req[bhttp::field::authorization]))) {
      return reply(bhttp::status::unauthorized,
                   error_body("Unauthorized: this server needs 'Authorization: Bearer <token>'"));
    }
    std::string_view target = sv(req.target());
    if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
    endpoint_state* ep = nullptr;
    for (auto& e : state_.endpoints) {
      if (e->path == target) ep = e.get();
    }
    if (ep == nullptr) {
      std::string paths;
      for (auto& e : state_.endpoints) append(paths, paths.empty() ? "" : ", ", e->path);
      return reply(bhttp::status::not_found, error_body(cat("Not Found: no MCP endpoint at ", target,
                                                            " (endpoints: ", paths, ")")));
    }
    const std::string_view protocol = sv(req["mcp-protocol-version"]);
    if (!protocol.empty() && !version_supported(protocol)) {
      std::string versions;
      for (const char* v : mcp::kSupportedVersions) append(versions, versions.empty() ? "" : ", ", v);
      return reply(bhttp::status::bad_request,
                   error_body(cat("Bad Request: unsupported MCP-Protocol-Version '", protocol,
                                  "' (supported: ", versions, ")")));
    }
    switch (req.method()) {
      case bhttp::verb::post: return handle_post(*ep, req);
      case bhttp::verb::get: return handle_get(*ep, req);
      case bhttp::verb::delete_: return handle_delete(*ep, req);
      default: {
        auto res = make_response(bhttp::status::method_not_allowed, error_body("Method Not Allowed"));
        res->set(bhttp::field::allow, "GET, POST, DELETE");
        return send(std::move(res));
      }
    }
  }

  // The session a request names: 400 without the header, 404 for an unknown one.
  std::shared_ptr<http_session> named_session(endpoint_state& ep, const bhttp::request<bhttp::string_body>& req) {
    const std::string_view id = sv(req["mcp-session-id"]);
    if (id.empty()) {
      reply(bhttp::status::bad_request, error_body("Bad Request: Mcp-Session-Id header is required"));
      return nullptr;
    }
    auto s = ep.sessions.find(id);
    if (!s) {
      reply(bhttp::status::not_found, error_body("Session not found: it ended or never existed; initialize again"));
      return nullptr;
    }
    session_header_ = s->id();
    s->touch();
    return s;
  }

  void handle_post(endpoint_state& ep, bhttp::request<bhttp::string_body>& req) {
    const std::string_view type = sv(req[bhttp::field::content_type]);
    if (!type.empty() && !header_has(type, "application/json")) {
      return reply(bhttp::status::unsupported_media_type,
                   error_body("Unsupported Media Type: send one JSON-RPC message as application/json"));
    }
    // The answer may be JSON or SSE (decided when the first message comes), so a client must take
    // both, as the spec requires; one that sends no Accept at all is served anyway.
    const std::string_view accept = sv(req[bhttp::field::accept]);
    const bool any = header_has(accept, "*/*");
    if (!accept.empty() && !any && (!header_has(accept, "application/json") || !header_has(accept, "text/event-stream"))) {
      return reply(bhttp::status::not_acceptable,
                   error_body("Not Acceptable: accept both application/json and text/event-stream"));
    }
    const std::string& body = req.body();
    const size_t first = body.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && body[first] == '[') {
      return reply(bhttp::status::bad_request,
                   error_body("Invalid Request: batches are not accepted over HTTP; send one message per POST",
                              mcp::jsonrpc::kInvalidRequest));
    }
    std::shared_ptr<http_session> session;
    http_session::post_result result;
    if (sv(req["mcp-session-id"]).empty()) {
      // Only initialize may come without a session; it creates one.
      session = session_registry::make(*ep.server);
      result = session->post(body);
      if (!result.initialize) {
        session->close(0);
        if (result.status == 400) return reply(bhttp::status::bad_request, result.body);
        return reply(bhttp::status::bad_request,
                     error_body("Bad Request: Mcp-Session-Id header is required (send initialize first)"));
      }
      if (auto evicted = ep.sessions.add(session)) {
        log::info("http", cat("session limit (", state_.opts.max_sessions, ") reached at ", ep.path,
                              "; ended the session unused the longest"));
        close_later(std::move(evicted), 0);
      }
      session_header_ = session->id();
    } else {
      session = named_session(ep, req);
      if (!session) return;
      result = session->post(body);
    }
    if (result.status == 400) return reply(bhttp::status::bad_request, result.body);
    if (result.status == 202) return reply(bhttp::status::accepted, "");
    begin_stream(result.stream, 0, true);
  }

  void handle_get(endpoint_state& ep, bhttp::request<bhttp::string_body>& req) {
    if (!header_has(sv(req[bhttp::field::accept]), "text/event-stream")) {
      return reply(bhttp::status::not_acceptable, error_body("Not Acceptable: GET opens an SSE stream; accept text/event-stream"));
    }
    auto session = named_session(ep, req);
    if (!session) return;
    const std::string_view last = sv(req["last-event-id"]);
    if (last.empty()) {
      auto s = session->standalone();
      return begin_stream(s, s->delivered(), false);
    }
    // "<stream>-<sequence>"
    int index = -1;
    uint64_t seq = 0;
    const size_t dash = last.find('-');
    bool ok = dash != std::string_view::npos;
    if (ok) {
      auto r1 = std::from_chars(last.data(), last.data() + dash, index);
      auto r2 = std::from_chars(last.data() + dash + 1, last.data() + last.size(), seq);
      ok = r1.ec == std::errc() && r2.ec == std::errc() && r1.ptr == last.data() + dash &&
           r2.ptr == last.data() + last.size();
    }
    std::shared_ptr<stream> s = ok ? session->find_stream(index) : nullptr;
    if (!s) {
      return reply(bhttp::status::bad_request,
                   error_body(cat("Bad Request: Last-Event-ID '", last, "' names no stream this session still keeps")));
    }
    begin_stream(s, seq, false);
  }

  void handle_delete(endpoint_state& ep, bhttp::request<bhttp::string_body>& req) {
    auto session = named_session(ep, req);
    if (!session) return;
    ep.sessions.remove(session->id());
    close_later(session, 1000);
    session_header_.clear();
    reply(bhttp::status::ok, "");
  }

  // ---- Plain responses ---------------------------------------------------------------------

  std::shared_ptr<bhttp::response<bhttp::string_body>> make_response(bhttp::status status, std::string body) {
    auto res = std::make_shared<bhttp::response<bhttp::string_body>>(status, version_);
    res->set(bhttp::field::server, "toolhost");
    if (!body.empty()) res->set(bhttp::field::content_type, "application/json");
    if (!session_header_.empty()) res->set("Mcp-Session-Id", session_header_);
    if (status == bhttp::status::unauthorized) res->set(bhttp::field::www_authenticate, "Bearer realm=\"toolhost\"");
    res->body() = std::move(body);
    res->keep_alive(keep_alive_);
    res->prepare_payload();
    return res;
  }

  void reply(bhttp::status status, std::string body) { send(make_response(status, std::move(body))); }

  void send(std::shared_ptr<bhttp::response<bhttp::string_body>> res) {
    bhttp::async_write(socket_, *res, [self = shared_from_this(), res](beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->next_request();
    });
  }

  void next_request() {
    if (!keep_alive_) return close();
    read_header();
  }

  // ---- Streams -----------------------------------------------------------------------------

  // A POST starts undecided: if its answer is the first and only message it goes out as one JSON
  // body, and anything sent before the answer (progress, logs, elicitation) turns it into SSE.
  void begin_stream(std::shared_ptr<stream> s, uint64_t after, bool post) {
    stream_ = std::move(s);
    self_ = shared_from_this();  // nothing else owns a connection that waits for its stream
    cursor_ = after;
    mode_ = post ? mode::pending : mode::sse;
    std::weak_ptr<connection> weak = shared_from_this();
    auto executor = socket_.get_executor();
    generation_ = stream_->attach([weak, executor] {
      net::post(executor, [weak] {
        if (auto self = weak.lock()) self->pump();
      });
    });
    pending_headers_ = mode_ == mode::sse;
    if (mode_ == mode::sse) arm_keepalive();
    pump();
  }

  std::string sse_headers() const {
    std::string h =
        "HTTP/1.1 200 OK\r\nServer: toolhost\r\nContent-Type: text/event-stream\r\n"
        "Cache-Control: no-cache, no-transform\r\nX-Accel-Buffering: no\r\nTransfer-Encoding: chunked\r\n";
    if (!session_header_.empty()) append(h, "Mcp-Session-Id: ", session_header_, "\r\n");
    if (!keep_alive_) h += "Connection: close\r\n";
    h += "\r\n";
    return h;
  }

  void pump() {
    if (!stream_) return;
    if (writing_) {
      again_ = true;
      return;
    }
    if (!stream_->is_current(generation_)) {  // another connection resumed this stream
      keep_alive_ = false;
      std::string out = pending_headers_ ? sse_headers() : "";
      if (mode_ == mode::sse) out += "0\r\n\r\n";
      return write_stream(std::move(out), true);
    }
    stream::slice slice = stream_->take(cursor_);
    if (mode_ == mode::pending) {
      if (slice.events.empty() && !slice.ended) return;
      if (slice.ended && slice.events.size() <= 1) {
        std::string body = slice.events.empty() ? std::string() : std::move(slice.events.back().data);
        const bhttp::status status = body.empty() ? bhttp::status::accepted : bhttp::status::ok;
        drop_stream();
        return reply(status, std::move(body));
      }
      mode_ = mode::sse;
      pending_headers_ = true;
      arm_keepalive();
    }
    std::string out;
    if (pending_headers_) {
      out = sse_headers();
      pending_headers_ = false;
    }
    for (const auto& e : slice.events) {
      out += chunk(cat("id: ", stream_->event_id(e.seq), "\ndata: ", e.data, "\n\n"));
      cursor_ = e.seq;
    }
    if (!slice.events.empty()) stream_->mark_delivered(cursor_);
    if (slice.ended) out += "0\r\n\r\n";
    if (out.empty()) return;
    write_stream(std::move(out), slice.ended);
  }

  void write_stream(std::string out, bool last) {
    writing_ = true;
    out_ = std::move(out);
    net::async_write(socket_, net::buffer(out_), [self = shared_from_this(), last](beast::error_code ec, size_t) {
      self->writing_ = false;
      if (ec) {
        self->drop_stream();
        return self->close();
      }
      if (last) {
        self->drop_stream();
        return self->next_request();
      }
      if (self->again_) {
        self->again_ = false;
        self->pump();
      }
    });
  }

  void arm_keepalive() {
    timer_.expires_after(state_.opts.keepalive_interval);
    timer_.async_wait([weak = std::weak_ptr<connection>(shared_from_this())](beast::error_code ec) {
      auto self = weak.lock();
      if (ec || !self || !self->stream_ || self->mode_ != mode::sse) return;
      if (!self->writing_) {
        std::string out = self->pending_headers_ ? self->sse_headers() : "";
        self->pending_headers_ = false;
        out += chunk(": keep-alive\n\n");
        self->write_stream(std::move(out), false);
      }
      self->arm_keepalive();
    });
  }

  void drop_stream() {
    auto keep = std::move(self_);  // released when this returns, not while it runs
    if (stream_) stream_->detach(generation_);
    stream_.reset();
    mode_ = mode::none;
    again_ = false;
    timer_.cancel();
  }

  void close() {
    drop_stream();
    beast::error_code ec;
    socket_.socket().shutdown(tcp::socket::shutdown_both, ec);
    socket_.close();
  }

  beast::tcp_stream socket_;
  shared_state& state_;
  net::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  bool keep_alive_ = true;
  unsigned version_ = 11;
  std::string session_header_;

  std::shared_ptr<stream> stream_;
  std::shared_ptr<connection> self_;
  uint64_t cursor_ = 0;
  uint64_t generation_ = 0;
  mode mode_ = mode::none;
  bool pending_headers_ = false;
  bool writing_ = false;
  bool again_ = false;
  std::string out_;
};

class listener : public std::enable_shared_from_this<listener> {
 public:
  listener(net::io_context& ioc, tcp::acceptor acceptor, shared_state& state)
      : ioc_(ioc), acceptor_(std::move(acceptor)), state_(state) {}

  void accept() {
    acceptor_.async_accept(net::make_strand(ioc_), [self = shared_from_this()](beast::error_code ec, tcp::socket s) {
      if (!ec) {
        beast::error_code ignored;
        s.set_option(tcp::no_delay(true), ignored);  // small JSON-RPC writes must not wait for Nagle
        std::make_shared<connection>(std::move(s), self->state_)->start();
      } else if (ec == net::error::operation_aborted) {
        return;
      }
      self->accept();
    });
  }

 private:
  net::io_context& ioc_;
  tcp::acceptor acceptor_;
  shared_state& state_;
};

}  // namespace

int serve(const options& opts, const std::vector<endpoint>& endpoints, const std::function<bool()>& stop_requested) {
  shared_state state{opts, request_guard(opts.token, opts.allowed_origins, !opts.bind.loopback), {}};
  for (const auto& e : endpoints) {
    state.endpoints.push_back(std::make_unique<endpoint_state>(e.path, e.server, opts.max_sessions));
  }
  net::io_context ioc;
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
  const std::string base = address.is_v6() ? cat("http://[", opts.bind.host, "]:", port)
                                           : cat("http://", opts.bind.host, ":", port);
  if (!opts.bind.loopback) {
    log::warning("http", cat("--unsafe-http: listening on a non-loopback address; anyone who can reach ", base,
                             " can use these servers", opts.token.empty() ? ", and no token is set" : ""));
  }
  for (const auto& e : endpoints) log::info("http", cat("serving '", e.server->name(), "' at ", base, e.path));
  std::make_shared<listener>(ioc, std::move(acceptor), state)->accept();

  // Idle sessions end after opts.session_idle.
  net::steady_timer sweep(ioc);
  std::function<void()> arm_sweep = [&] {
    sweep.expires_after(std::chrono::seconds(30));
    sweep.async_wait([&](beast::error_code e) {
      if (e) return;
      for (auto& ep : state.endpoints) {
        for (auto& s : ep->sessions.expire(opts.session_idle)) close_later(s, 0);
      }
      arm_sweep();
    });
  };
  arm_sweep();

  unsigned threads = opts.io_threads;
  if (threads == 0) threads = std::clamp(std::thread::hardware_concurrency(), 2u, 4u);
  std::vector<std::thread> pool;
  for (unsigned i = 0; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  while (!stop_requested()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ioc.stop();
  for (auto& t : pool) t.join();
  for (auto& ep : state.endpoints) {
    for (auto& s : ep->sessions.take_all()) s->close(1000);
  }
  return 0;
}

}  // namespace toolhost::transport::http
