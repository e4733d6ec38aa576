#include "host/transport/http_connection.hpp"

#include <absl/strings/ascii.h>
#include <absl/strings/match.h>
#include <toolhost/sdk/strings.hpp>

#include <sys/socket.h>

#include <cerrno>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <memory>
#include <optional>

#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"
#include "host/transport/http_context.hpp"
#include "host/transport/http_stream.hpp"

namespace toolhost::transport::http {
namespace {

namespace beast = boost::beast;
namespace net = boost::asio;
namespace bhttp = boost::beast::http;
using tcp = net::ip::tcp;

// Refusals at the cap still hold a descriptor while the 503 goes out; beyond this many at once a
// newcomer is closed without one.
constexpr int kMaxRefusing = 64;
std::atomic<int> g_refusing{0};

std::string error_body(std::string_view message, int code = -32000) {
  return mcp::jsonrpc::error_message("null", code, message);
}

bool header_has(std::string_view value, std::string_view token) { return value.find(token) != std::string_view::npos; }

std::string_view sv(beast::string_view v) { return std::string_view(v.data(), v.size()); }

// The MCP headers of a request, read in one pass over its fields (a lookup by name costs a search
// of the field set each: five of them were 2.7k instructions of a 2026-07-28 call, bench/mcp).
// Where a header repeats, its first value counts. Views into the request's fields.
struct mcp_fields {
  std::string_view protocol_version;  // MCP-Protocol-Version
  std::string_view session_id;        // Mcp-Session-Id
  std::string_view method;            // Mcp-Method
  std::string_view name;              // Mcp-Name
  // Mcp-Param-{Name}: ({Name} as sent, value); what a tool's x-mcp-header arguments must agree with.
  std::vector<std::pair<std::string_view, std::string_view>> params;

  // The Mcp-Param-{Name} headers with {Name} in lower case, as the session compares them.
  std::vector<std::pair<std::string, std::string_view>> lowered_params() const {
    std::vector<std::pair<std::string, std::string_view>> out;
    out.reserve(params.size());
    for (const auto& [suffix, value] : params) {
      out.emplace_back(absl::AsciiStrToLower(absl::string_view(suffix.data(), suffix.size())), value);
    }
    return out;
  }
};

bool iequals(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(absl::string_view(a.data(), a.size()), absl::string_view(b.data(), b.size()));
}

mcp_fields read_mcp_fields(const bhttp::fields& fields) {
  constexpr std::string_view kParam = "param-";
  mcp_fields out;
  const auto keep_first = [](std::string_view& slot, std::string_view value) {
    if (slot.data() == nullptr) slot = value.empty() ? std::string_view("", 0) : value;
  };
  for (const auto& field : fields) {
    const std::string_view name = sv(field.name_string());
    // The first letter first: most fields (Host, Content-Type, Accept...) end there.
    if (name.size() <= 4 || (name[0] | 0x20) != 'm' || !iequals(name.substr(0, 4), "mcp-")) continue;
    const std::string_view rest = name.substr(4);
    const std::string_view value = sv(field.value());
    if (iequals(rest, "protocol-version")) {
      keep_first(out.protocol_version, value);
    } else if (iequals(rest, "session-id")) {
      keep_first(out.session_id, value);
    } else if (iequals(rest, "method")) {
      keep_first(out.method, value);
    } else if (iequals(rest, "name")) {
      keep_first(out.name, value);
    } else if (rest.size() > kParam.size() && iequals(rest.substr(0, kParam.size()), kParam)) {
      out.params.emplace_back(rest.substr(kParam.size()), value);
    }
  }
  return out;
}

std::string chunk(std::string_view data) {
  char size[20];
  auto [end, ec] = std::to_chars(size, size + sizeof size, data.size(), 16);
  std::string out(size, end);
  out += "\r\n";
  out += data;
  out += "\r\n";
  return out;
}

class connection : public connection_table::member, public std::enable_shared_from_this<connection> {
 public:
  connection(connection_socket&& socket, server_context& ctx)
      : socket_(std::move(socket)), ctx_(ctx), timer_(socket_.get_executor()) {}
  ~connection() override { ctx_.connections.leave(slot_); }

  void start() {
    net::dispatch(socket_.get_executor(), [self = shared_from_this()] {
      if (!self->ctx_.connections.join(self->slot_, self->weak_from_this())) return self->refuse();
      self->wait_request(true);
    });
  }

  void preempt() override {
    net::post(socket_.get_executor(), [self = shared_from_this()] {
      // A request may have begun meanwhile: then it is answered, and the connection closes after.
      if (self->waiting_) return self->close();
      self->keep_alive_ = false;
    });
  }

 private:
  enum class mode { none, pending, sse };

  // ---- Reading -----------------------------------------------------------------------------

  // `fresh`: the connection just opened, and its first request's headers are due within
  // header_timeout of now; later requests may first wait idle_timeout for their first byte.
  void wait_request(bool fresh) {
    set_waiting(true);
    if (buffer_.size() == 0 && buffer_.capacity() != 0) buffer_.shrink_to_fit();  // nothing held while idle
    parser_.reset();
    if (buffer_.size() != 0) return read_header(fresh);  // the client sent it already (pipelining)
    // Waiting costs no buffer: the socket is watched until the first byte, under our own timer
    // (the stream's deadlines cover only its reads and writes).
    const auto deadline = fresh ? ctx_.opts.header_timeout : ctx_.opts.idle_timeout;
    if (fresh) socket_.expires_after(deadline);  // the headers are due this long after opening
    timer_.expires_after(deadline);
    timer_.async_wait([weak = weak_from_this()](beast::error_code ec) {
      auto self = weak.lock();
      if (!ec && self && self->waiting_ && !self->parser_) self->close();
    });
    socket_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), fresh](beast::error_code ec) {
      self->timer_.cancel();
      if (ec || !self->waiting_) return self->close();  // preempted, timed out, or gone
      self->read_header(fresh);
    });
  }

  void read_header(bool fresh) {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(ctx_.opts.max_body_bytes);
    if (!fresh) socket_.expires_after(ctx_.opts.header_timeout);
    bhttp::async_read_header(socket_, buffer_, *parser_,
                             beast::bind_front_handler(&connection::on_header, shared_from_this()));
  }

  void set_waiting(bool waiting) {
    waiting_ = waiting;
    ctx_.connections.set_waiting(slot_, waiting);
  }

  void on_header(beast::error_code ec, size_t) {
    set_waiting(false);
    if (ec) return on_read_error(ec);
    const auto& head = parser_->get();
    keep_alive_ = head.keep_alive();
    version_ = head.version();
    session_header_.clear();
    // Everything about the request is decided from its head, before a byte of body is read: a
    // refused request's body is never read, so the connection closes after the answer.
    if (refuse_head(head)) return;
    socket_.expires_after(ctx_.opts.body_timeout);
    bhttp::async_read(socket_, buffer_, *parser_, beast::bind_front_handler(&connection::on_body, shared_from_this()));
  }

  void on_body(beast::error_code ec, size_t) {
    if (ec) return on_read_error(ec);
    socket_.expires_never();
    // Handled in place, so that fields_ (views into the head) holds while it runs; every answer
    // is written asynchronously, so no next request's parser can begin before this returns.
    handle(parser_->get());
    fields_ = mcp_fields();
    parser_.reset();  // the body is not kept while the call runs
  }

  void on_read_error(beast::error_code ec) {
    keep_alive_ = false;
    if (ec == bhttp::error::body_limit) {
      return reply(bhttp::status::payload_too_large,
                   error_body(cat("Payload Too Large: a message may be at most ", ctx_.opts.max_body_bytes, " bytes")));
    }
    if (ec == bhttp::error::header_limit) {
      return reply(bhttp::status::request_header_fields_too_large, error_body("Request headers too large"));
    }
    if (ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
        ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message) {
      return reply(bhttp::status::bad_request, error_body(cat("Bad Request: ", ec.message())));
    }
    close();  // the client left, or ran out of time
  }

  // ---- Requests ----------------------------------------------------------------------------

  // Answers and returns true when the head alone decides the request is refused.
  bool refuse_head(const bhttp::request_parser<bhttp::string_body>::value_type& head) {
    auto refuse = [this](bhttp::status status, std::string message) {
      keep_alive_ = false;
      reply(status, error_body(message));
      return true;
    };
    if (auto refusal = check_request_head(head)) {
      return refuse(static_cast<bhttp::status>(refusal->status), refusal->message);
    }
    const std::string_view host = sv(head[bhttp::field::host]);
    const std::string_view origin = sv(head[bhttp::field::origin]);
    if (!ctx_.guard.host_allowed(host)) {
      return refuse(bhttp::status::forbidden,
                    cat("Forbidden: Host '", host, "' is not this server (DNS rebinding protection)"));
    }
    if (!ctx_.guard.origin_allowed(origin)) {
      return refuse(bhttp::status::forbidden, cat("Forbidden: Origin '", origin, "' is not allowed"));
    }
    if (!ctx_.guard.authorized(sv(head[bhttp::field::authorization]))) {
      return refuse(bhttp::status::unauthorized, "Unauthorized: this server needs 'Authorization: Bearer <token>'");
    }
    std::string_view target = sv(head.target());
    if (auto q = target.find('?'); q != std::string_view::npos) target = target.substr(0, q);
    endpoint_ = nullptr;
    for (auto& e : ctx_.endpoints) {
      if (e->path == target) endpoint_ = e.get();
    }
    if (endpoint_ == nullptr) {
      std::string paths;
      for (auto& e : ctx_.endpoints) append(paths, paths.empty() ? "" : ", ", e->path);
      return refuse(bhttp::status::not_found,
                    cat("Not Found: no MCP endpoint at ", target, " (endpoints: ", paths, ")"));
    }
    // A request without a session may be a 2026-07-28 one, whose version the session checks
    // against its _meta (answering with the request's id); within a session the header must name
    // a version initialize could have chosen.
    fields_ = read_mcp_fields(head);
    const std::string_view protocol = fields_.protocol_version;
    if (!fields_.session_id.empty() && !protocol.empty() && !mcp::listed(mcp::kSupportedVersions, protocol)) {
      std::string versions;
      for (std::string_view v : mcp::kSupportedVersions) append(versions, versions.empty() ? "" : ", ", v);
      return refuse(bhttp::status::bad_request,
                    cat("Bad Request: unsupported MCP-Protocol-Version '", protocol, "' (supported: ", versions, ")"));
    }
    const std::string_view accept = sv(head[bhttp::field::accept]);
    switch (head.method()) {
      case bhttp::verb::post: {
        const std::string_view type = sv(head[bhttp::field::content_type]);
        if (!type.empty() && !header_has(type, "application/json")) {
          return refuse(bhttp::status::unsupported_media_type,
                        "Unsupported Media Type: send one JSON-RPC message as application/json");
        }
        // The answer may be JSON or SSE (decided when the first message comes), so a client must
        // take both, as the spec requires; one that sends no Accept at all is served anyway.
        if (!accept.empty() && !header_has(accept, "*/*") &&
            (!header_has(accept, "application/json") || !header_has(accept, "text/event-stream"))) {
          return refuse(bhttp::status::not_acceptable,
                        "Not Acceptable: accept both application/json and text/event-stream");
        }
        return false;
      }
      case bhttp::verb::get:
        if (!header_has(accept, "text/event-stream")) {
          return refuse(bhttp::status::not_acceptable,
                        "Not Acceptable: GET opens an SSE stream; accept text/event-stream");
        }
        return false;
      case bhttp::verb::delete_: return false;
      default: {
        keep_alive_ = false;
        auto res = make_response(bhttp::status::method_not_allowed, error_body("Method Not Allowed"));
        res->set(bhttp::field::allow, "GET, POST, DELETE");
        send(std::move(res));
        return true;
      }
    }
  }

  void handle(bhttp::request<bhttp::string_body>& req) {
    switch (req.method()) {
      case bhttp::verb::post: return handle_post(*endpoint_, req);
      case bhttp::verb::get: return handle_get(*endpoint_, req);
      default: return handle_delete(*endpoint_, req);
    }
  }

  // The session a request names: 400 without the header, 404 for an unknown one.
  std::shared_ptr<http_session> named_session(endpoint_state& ep, std::string_view id) {
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
    const std::string& body = req.body();
    const size_t first = body.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && body[first] == '[') {
      return reply(bhttp::status::bad_request,
                   error_body("Invalid Request: batches are not accepted over HTTP; send one message per POST",
                              mcp::jsonrpc::kInvalidRequest));
    }
    const mcp_fields& fields = fields_;
    std::shared_ptr<http_session> session;
    http_session::post_result result;
    if (fields.session_id.empty()) {
      // Only initialize and 2026-07-28 requests come without a session: initialize creates one;
      // 2026-07-28 requests are served by a session this connection owns. They come one after
      // another, so the session that served the last one serves the next (it holds nothing of a
      // finished request) and a request does not pay for building and ending one (bench/mcp).
      const bool reuse = stateless_ && mcp::listed(mcp::kStatelessVersions, fields.protocol_version);
      session = reuse ? stateless_ : session_registry::make(*ep.server);
      if (!reuse && stateless_) end_stateless();
      const mcp::request_headers headers{true, fields.protocol_version, fields.method, fields.name,
                                         fields.lowered_params()};
      result = session->post(body, headers, !reuse);
      if (result.stateless && result.status == 200) {
        stateless_ = session;
        return begin_stream(session, result.stream, 0, true);
      }
      if (reuse) stateless_.reset();  // closed below with the error's request
      if (!result.initialize) {
        session->close(0);
        if (result.status == 400) return reply(bhttp::status::bad_request, result.body);
        return reply(bhttp::status::bad_request,
                     error_body("Bad Request: Mcp-Session-Id header is required (send initialize first)"));
      }
      auto admitted = ep.sessions.add(session);
      if (admitted.evicted) {
        ctx_.evicted_sessions.note(cat("at the limit of ", ep.sessions.settings().max_sessions, " sessions at ",
                                       ep.path, ", ended a session to make room for a new one (unused ones go first)"));
        close_later(std::move(admitted.evicted), 0);
      }
      if (!admitted.added) {
        ctx_.refused_sessions.note(cat("refused a new session at ", ep.path, ": all ",
                                       ep.sessions.settings().max_sessions, " sessions are in use"));
        close_later(std::move(session), 0);
        auto res = make_response(
            bhttp::status::service_unavailable,
            error_body(cat("Service Unavailable: this endpoint already serves ", ep.sessions.settings().max_sessions,
                           " sessions in use; end one with DELETE or try again later")));
        res->set(bhttp::field::retry_after, "5");
        return send(std::move(res));
      }
      session_header_ = session->id();
    } else {
      session = named_session(ep, fields.session_id);
      if (!session) return;
      result = session->post(body);
    }
    if (result.status == 400) return reply(bhttp::status::bad_request, result.body);
    if (result.status == 404) {
      return reply(bhttp::status::not_found, error_body("Session not found: it ended; initialize again"));
    }
    if (result.status == 202) return reply(bhttp::status::accepted, "");
    begin_stream(session, result.stream, 0, true);
  }

  void handle_get(endpoint_state& ep, bhttp::request<bhttp::string_body>& req) {
    // A GET must be answered with a stream or 405 (2025-11-25), and clients treat 405 as "no
    // stream here" and go on: without a session there is none (2026-07-28 has no GET at all).
    if (fields_.session_id.empty()) {
      auto res = make_response(bhttp::status::method_not_allowed,
                               error_body("Method Not Allowed: GET opens a session's stream and needs its Mcp-Session-Id "
                                          "(from initialize); 2026-07-28 has no GET stream, it uses subscriptions/listen"));
      res->set(bhttp::field::allow, "POST");
      return send(std::move(res));
    }
    auto session = named_session(ep, fields_.session_id);
    if (!session) return;
    const std::string_view last = sv(req["last-event-id"]);
    if (last.empty()) {
      auto s = session->standalone();
      return begin_stream(session, s, s->delivered(), false);
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
    begin_stream(session, s, seq, false);
  }

  void handle_delete(endpoint_state& ep, bhttp::request<bhttp::string_body>&) {
    auto session = named_session(ep, fields_.session_id);
    if (!session) return;
    ep.sessions.remove(session->id());
    close_later(session, 0);  // the client said it is done: its calls are cancelled now
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
    wait_request(false);
  }

  // At the cap with every connection working: a 503 that says so, then close. The request is
  // drained briefly first so that closing does not reset the connection before the client reads
  // the answer.
  void refuse() {
    ctx_.refused_connections.note(
        cat("refused a connection: all ", ctx_.connections.max(), " connections are busy with requests (503)"));
    if (g_refusing.fetch_add(1) >= kMaxRefusing) {
      --g_refusing;
      return close();
    }
    refusing_ = true;
    keep_alive_ = false;
    static const std::string kBody =
        error_body("Service Unavailable: toolhost is at its connection limit, every connection busy; retry shortly");
    out_ =
        cat("HTTP/1.1 503 Service Unavailable\r\nServer: toolhost\r\nContent-Type: application/json\r\n"
            "Retry-After: 1\r\nConnection: close\r\nContent-Length: ",
            kBody.size(), "\r\n\r\n", kBody);
    socket_.expires_after(std::chrono::seconds(1));
    net::async_write(socket_, net::buffer(out_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->close();
      beast::error_code ignored;
      self->socket_.socket().shutdown(tcp::socket::shutdown_send, ignored);
      self->socket_.expires_after(std::chrono::milliseconds(250));
      self->drain();
    });
  }

  void drain() {
    socket_.async_read_some(net::buffer(scratch_), [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->close();
      self->drain();
    });
  }

  // ---- Streams -----------------------------------------------------------------------------

  // A POST starts undecided: if its answer is the first and only message it goes out as one JSON
  // body, and anything sent before the answer (progress, logs, elicitation) turns it into SSE.
  void begin_stream(const std::shared_ptr<http_session>& session, std::shared_ptr<stream> s, uint64_t after,
                    bool post) {
    session_ = session;
    stream_ = std::move(s);
    self_ = shared_from_this();  // nothing else owns a connection that waits for its stream
    cursor_ = after;
    wrote_event_ = false;
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
    watch_peer();
    pump();
  }

  // While the connection waits for its stream nothing reads from it, so a client that hangs up
  // would go unnoticed until the answer is written: wait for the socket to turn readable, which
  // is either the client's next request (it is still there) or the end of the connection.
  void watch_peer() {
    const uint64_t watch = ++watch_;
    socket_.socket().async_wait(tcp::socket::wait_read, [self = shared_from_this(), watch](beast::error_code ec) {
      if (ec || watch != self->watch_ || !self->stream_) return;
      // Readiness can be reported late (the edge of bytes that were read since), so look: a byte
      // is a pipelined request (the client is there), none yet means a stale wake-up (watch on),
      // and only an orderly or failed end of the connection is a client that went away.
      char byte = 0;
      const ssize_t n = ::recv(self->socket_.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n > 0) return;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return self->watch_peer();
      self->lost_peer();
    });
  }

  // The client went away before its answer: its request is cancelled, at once if it never saw an
  // event id to resume with, else after resume_grace unless it came back for the stream.
  void lost_peer() {
    auto s = stream_;
    auto session = session_.lock();
    const bool resumable = wrote_event_ && !stateless_;  // 2026-07-28 has no resumption
    close();
    if (!s || !session) return;
    if (!resumable) return session->abandon(s);
    auto timer = std::make_shared<timer_type>(socket_.get_executor(), ctx_.opts.resume_grace);
    timer->async_wait([timer, s, weak = std::weak_ptr<http_session>(session)](beast::error_code) {
      if (auto session = weak.lock()) session->abandon(s);
    });
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
        bhttp::status status = body.empty() ? bhttp::status::accepted : bhttp::status::ok;
        if (!body.empty() && stream_->status() != 0) status = static_cast<bhttp::status>(stream_->status());
        if (auto session = session_.lock()) session->release(stream_);  // no event id went out
        drop_stream(true);
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
    if (slice.ended) out += "0\r\n\r\n";
    if (out.empty()) return;
    write_stream(std::move(out), slice.ended);
  }

  void write_stream(std::string out, bool last) {
    writing_ = true;
    out_ = std::move(out);
    const uint64_t written = cursor_;
    net::async_write(socket_, net::buffer(out_),
                     [self = shared_from_this(), last, written](beast::error_code ec, size_t) {
                       self->writing_ = false;
                       if (ec) return self->lost_peer();
                       if (self->stream_ && written != 0) {
                         self->stream_->mark_delivered(written);
                         self->wrote_event_ = true;
                       }
                       if (last) {
                         self->out_ = std::string();  // a long stream's buffer is not kept for the next request
                         const bool whole = self->stream_ && self->stream_->delivered_to_end();
                         if (whole) {
                           if (auto session = self->session_.lock()) session->release(self->stream_);
                         }
                         self->drop_stream(whole);
                         return self->next_request();
                       }
                       if (self->again_) {
                         self->again_ = false;
                         self->pump();
                       }
                     });
  }

  void arm_keepalive() {
    timer_.expires_after(ctx_.opts.keepalive_interval);
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

  // `answered`: the stream's answer went out whole, so a 2026-07-28 request's session is kept
  // for this connection's next request; otherwise it ends here.
  void drop_stream(bool answered = false) {
    auto keep = std::move(self_);  // released when this returns, not while it runs
    if (stream_) {
      stream_->detach(generation_);
      ++watch_;  // the peer watch ends with the stream
      beast::error_code ignored;
      socket_.socket().cancel(ignored);
      // 2026-07-28: a stream closed before its answer is the request's cancellation (said, and
      // done, before its session closes and ends the stream).
      if (stateless_) stateless_->abandon(stream_);
    }
    stream_.reset();
    session_.reset();
    if (stateless_ && !(answered && keep_alive_)) end_stateless();
    mode_ = mode::none;
    again_ = false;
    timer_.cancel();
  }

  // A 2026-07-28 session ends with its connection, or with a request that did not end in its
  // answer (what still runs is cancelled).
  void end_stateless() {
    stateless_->close(0);  // never waits: a call still running is cancelled, not awaited
    stateless_.reset();
  }

  void close() {
    waiting_ = false;
    drop_stream();
    if (stateless_) end_stateless();
    ctx_.connections.leave(slot_);
    if (refusing_) {
      refusing_ = false;
      --g_refusing;
    }
    beast::error_code ec;
    socket_.socket().shutdown(tcp::socket::shutdown_both, ec);
    socket_.close();
  }

  using timer_type = net::basic_waitable_timer<std::chrono::steady_clock, net::wait_traits<std::chrono::steady_clock>,
                                               connection_executor>;

  beast::basic_stream<tcp, connection_executor> socket_;
  server_context& ctx_;
  connection_table::slot slot_;
  timer_type timer_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  endpoint_state* endpoint_ = nullptr;
  mcp_fields fields_;  // the request's MCP headers, read once with its head (views into parser_)
  bool keep_alive_ = true;
  unsigned version_ = 11;
  std::string session_header_;
  bool refusing_ = false;
  bool waiting_ = false;  // for a request: the table may preempt it
  char scratch_[512];

  std::weak_ptr<http_session> session_;
  std::shared_ptr<http_session> stateless_;  // this connection's 2026-07-28 requests' session
  std::shared_ptr<stream> stream_;
  std::shared_ptr<connection> self_;
  uint64_t cursor_ = 0;
  uint64_t generation_ = 0;
  uint64_t watch_ = 0;
  mode mode_ = mode::none;
  bool pending_headers_ = false;
  bool writing_ = false;
  bool again_ = false;
  bool wrote_event_ = false;  // an event id reached the client: it can resume
  std::string out_;
};

}  // namespace

void serve_connection(connection_socket socket, server_context& ctx) {
  beast::error_code ignored;
  socket.set_option(tcp::no_delay(true), ignored);  // small JSON-RPC writes must not wait for Nagle
  std::make_shared<connection>(std::move(socket), ctx)->start();
}

}  // namespace toolhost::transport::http
