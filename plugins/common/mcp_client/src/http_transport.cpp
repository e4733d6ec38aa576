#include <toolhost/mcp_client/http_transport.hpp>

#include <atomic>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <sys/socket.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <toolhost/mcp_client/json_rpc.hpp>
#include <toolhost/mcp_client/sse_parser.hpp>
#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/param_headers.hpp>

namespace toolhost::mcp_client {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
namespace sdk = toolhost::sdk;

struct parsed_url {
  std::string host;
  std::string port;
  std::string target;
};

absl::StatusOr<parsed_url> parse_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (url.rfind("https://", 0) == 0) {
    return absl::UnimplementedError("https upstreams (" + url +
                                    ") are not supported yet; use http:// on a trusted network or a command");
  }
  if (url.rfind(kScheme, 0) != 0)
    return absl::InvalidArgumentError("the upstream URL " + url + " does not start with http://");
  const std::string rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  const std::string authority = rest.substr(0, slash);
  parsed_url out;
  out.target = slash == std::string::npos ? "/" : rest.substr(slash);
  const size_t colon = authority.rfind(':');
  if (colon == std::string::npos) {
    out.host = authority;
    out.port = "80";
  } else {
    out.host = authority.substr(0, colon);
    out.port = authority.substr(colon + 1);
  }
  if (out.host.empty() || out.port.empty())
    return absl::InvalidArgumentError("the upstream URL " + url + " names no host");
  return out;
}

// What a POST's headers repeat of its body in 2026-07-28 (empty version: a 2025-era message).
struct mirrored {
  std::string version;  // params._meta's protocolVersion
  std::string method;
  // params.name, .uri or .taskId, for the methods that name something
  std::string name;
  sdk::param_headers::headers arguments;  // a tools/call's Mcp-Param-{Name} headers, encoded
};

// `tools` (may be null): the annotations that say which arguments of which tool are mirrored.
mirrored mirror_of(const rapidjson::Value& doc, const tool_annotations* tools) {
  mirrored m;
  const rapidjson::Value* params = sdk::member(doc, "params");
  const rapidjson::Value* meta = params != nullptr ? sdk::member(*params, "_meta") : nullptr;
  auto version = meta != nullptr ? sdk::string_member(*meta, "io.modelcontextprotocol/protocolVersion") : std::nullopt;
  if (!version) return m;
  m.version = std::string(*version);
  m.method = std::string(sdk::string_member(doc, "method").value_or(""));
  const char* named = m.method == "tools/call" || m.method == "prompts/get" ? "name"
                      : m.method == "resources/read"                        ? "uri"
                      : m.method.rfind("tasks/", 0) == 0                    ? "taskId"
                                                                            : nullptr;
  if (named != nullptr) m.name = std::string(sdk::string_member(*params, named).value_or(""));
  if (m.method == "tools/call" && tools != nullptr) {
    // A tool the last listing did not show goes without: the server says what it is missing.
    if (auto it = tools->find(m.name); it != tools->end()) {
      m.arguments = sdk::param_headers::headers_for(it->second, sdk::member(*params, "arguments"));
    }
  }
  return m;
}

// Streamable HTTP: every message we send is a POST on a thread of its own (an answer may
// stream for half an hour); the answer comes back as JSON or as an SSE stream that may carry
// the server's requests and notifications first. In 2025-11-25 one GET stream carries what the
// server sends outside any request, and a session id ties the POSTs together. In 2026-07-28
// there is neither: each POST says in its headers what its body is (MCP-Protocol-Version,
// Mcp-Method, Mcp-Name, and a tools/call's x-mcp-header arguments as Mcp-Param-*), list changes
// come on a subscriptions/listen POST, and closing a POST's stream cancels its request.
class http_transport final : public transport {
 public:
  http_transport(upstream_spec spec, parsed_url url) : spec_(std::move(spec)), url_(std::move(url)) {}
  ~http_transport() override { close(); }

  absl::Status start(transport_events events) override {
    events_ = std::move(events);
    return absl::OkStatus();
  }

  absl::Status send(std::string_view json) override {
    std::lock_guard lock(mutex_);
    if (closed_) return absl::UnavailableError("the connection to " + spec_.url + " is closed");
    // The id of a request, so that an HTTP failure can fail exactly that request.
    std::string id;
    mirrored headers;
    if (auto doc = sdk::parse_json(json); doc && sdk::member(*doc, "method") != nullptr) {
      if (const rapidjson::Value* v = sdk::member(*doc, "id")) id = sdk::to_json(*v);
      headers = mirror_of(*doc, tools_.get());
    }
    reap_finished();
    spawn([this, body = std::string(json), id, headers = std::move(headers)] { post(body, id, headers); });
    return absl::OkStatus();
  }

  void negotiated(std::string_view protocol_version) override {
    std::lock_guard lock(mutex_);
    protocol_version_ = std::string(protocol_version);
    stateless_ = protocol_version == "2026-07-28";
    if (!closed_ && !stateless_) spawn([this] { listen(); });
  }

  void mirror_arguments(std::shared_ptr<const tool_annotations> tools) override {
    std::lock_guard lock(mutex_);
    tools_ = std::move(tools);
  }

  absl::Status cancel(const std::string& id_json, std::string_view notice) override {
    {
      std::lock_guard lock(mutex_);
      if (stateless_) {
        // The server sees the stream end; the exchange's thread then fails the request, which the
        // connection has settled already.
        if (auto it = request_sockets_.find(id_json); it != request_sockets_.end()) ::shutdown(it->second, SHUT_RDWR);
        return absl::OkStatus();
      }
    }
    return send(notice);
  }

  void close() override {
    std::list<worker> threads;
    std::string session;
    {
      std::lock_guard lock(mutex_);
      if (!closed_) {
        closed_ = true;
        session = session_id_;
      }
      // Unblock every exchange in flight; their threads then end.
      for (int fd : sockets_) ::shutdown(fd, SHUT_RDWR);
      threads.swap(threads_);
    }
    for (auto& w : threads) {
      if (w.thread.get_id() == std::this_thread::get_id()) {
        w.thread.detach();
      } else if (w.thread.joinable()) {
        w.thread.join();
      }
    }
    if (!session.empty()) end_session(session);
    end("the connection to " + spec_.url + " was closed");
  }

 private:
  struct worker {
    std::thread thread;
    std::shared_ptr<std::atomic<bool>> done;
  };

  // Starts `fn` on a thread of its own. [mutex_ held]
  template <class F>
  void spawn(F fn) {
    auto done = std::make_shared<std::atomic<bool>>(false);
    threads_.push_back(worker{std::thread([fn = std::move(fn), done] {
                                fn();
                                done->store(true);
                              }),
                              done});
  }

  // Joins the threads whose exchange is over, so that a long session does not pile them up.
  // [mutex_ held]
  void reap_finished() {
    for (auto it = threads_.begin(); it != threads_.end();) {
      if (it->done->load()) {
        it->thread.join();
        it = threads_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // One exchange's socket, registered so that close() can interrupt it.
  class exchange {
   public:
    exchange(http_transport& owner) : owner_(owner), socket_(io_) {}
    ~exchange() {
      std::lock_guard lock(owner_.mutex_);
      owner_.sockets_.erase(fd_);
      if (!id_.empty()) owner_.request_sockets_.erase(id_);
    }
    // Registers the socket as the one carrying request `id`, for cancel().
    void carries(const std::string& id) {
      std::lock_guard lock(owner_.mutex_);
      if (fd_ < 0 || id.empty()) return;
      owner_.request_sockets_[id] = fd_;
      id_ = id;
    }
    beast::error_code connect() {
      beast::error_code ec;
      tcp::resolver resolver(io_);
      auto endpoints = resolver.resolve(owner_.url_.host, owner_.url_.port, ec);
      if (ec) return ec;
      net::connect(socket_, endpoints, ec);
      if (ec) return ec;
      std::lock_guard lock(owner_.mutex_);
      if (owner_.closed_) return net::error::operation_aborted;
      fd_ = socket_.native_handle();
      owner_.sockets_.insert(fd_);
      return ec;
    }
    tcp::socket& socket() { return socket_; }

   private:
    http_transport& owner_;
    net::io_context io_;
    tcp::socket socket_;
    int fd_ = -1;
    std::string id_;
  };

  http::request<http::string_body> make(http::verb verb, const mirrored& headers = {}) {
    http::request<http::string_body> req{verb, url_.target, 11};
    req.set(http::field::host, url_.host + ":" + url_.port);
    req.set(http::field::user_agent, "toolhost-mcp-client");
    std::lock_guard lock(mutex_);
    if (!session_id_.empty()) req.set("Mcp-Session-Id", session_id_);
    if (!headers.version.empty()) {
      req.set("MCP-Protocol-Version", headers.version);
      req.set("Mcp-Method", headers.method);
      if (!headers.name.empty()) req.set("Mcp-Name", sdk::param_headers::encode(headers.name));
      for (const auto& [name, value] : headers.arguments) req.set(name, value);
    } else if (!protocol_version_.empty()) {
      req.set("MCP-Protocol-Version", protocol_version_);
    }
    for (const auto& [k, v] : spec_.headers) req.set(k, v);
    return req;
  }

  void post(const std::string& body, const std::string& id, const mirrored& headers) {
    exchange x(*this);
    if (beast::error_code ec = x.connect()) {
      return fail_closed("could not reach the upstream " + spec_.url + ": " + ec.message());
    }
    x.carries(id);
    auto req = make(http::verb::post, headers);
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "application/json, text/event-stream");
    req.body() = body;
    req.prepare_payload();
    beast::error_code ec;
    http::write(x.socket(), req, ec);
    if (ec) return fail_closed("could not send to the upstream " + spec_.url + ": " + ec.message());
    read_answer(x, id);
  }

  // Reads a POST's or GET's answer: JSON, an SSE stream, or an HTTP error.
  void read_answer(exchange& x, const std::string& id) {
    beast::flat_buffer buffer;
    http::response_parser<http::buffer_body> parser;
    // No limit (an SSE stream may go on for half an hour; JSON is capped below), spelled as the
    // largest number: Boost 1.74 compares a Content-Length with an unset limit as larger than
    // it, so `boost::none` refuses every JSON answer with "body limit exceeded".
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    beast::error_code ec;
    http::read_header(x.socket(), buffer, parser, ec);
    if (ec) {
      if (!id.empty())
        fail_request(id, "the upstream " + spec_.url + " closed the connection before answering: " + ec.message());
      return;
    }
    auto& res = parser.get();
    if (auto session = res.find("Mcp-Session-Id"); session != res.end()) {
      std::lock_guard lock(mutex_);
      session_id_ = std::string(session->value());
    }
    const unsigned status = res.result_int();
    const std::string type(res[http::field::content_type]);
    const bool sse = type.rfind("text/event-stream", 0) == 0;
    if (status == 404) {
      bool had_session = false;
      {
        std::lock_guard lock(mutex_);
        had_session = !session_id_.empty();
      }
      if (had_session) return fail_closed("the upstream " + spec_.url + " ended the session (HTTP 404)");
    }

    sse_parser events;
    std::string whole;
    char chunk[16384];
    while (!parser.is_done()) {
      res.body().data = chunk;
      res.body().size = sizeof(chunk);
      // read_some: events must go on as they come, not when a buffer fills up.
      http::read_some(x.socket(), buffer, parser, ec);
      if (ec == http::error::need_buffer) ec = {};
      if (ec) break;
      const std::string_view got(chunk, sizeof(chunk) - res.body().size);
      if (sse) {
        events.feed(got, [this](std::string_view data) { deliver(data); });
      } else {
        whole.append(got);
        if (whole.size() > (size_t{64} << 20)) break;
      }
    }
    if (status == 202 || id.empty()) return;  // a notification or response was accepted
    if (status >= 400) {
      // A JSON-RPC error in the body keeps its code: a 2026-07-28 server answers -32020 (headers
      // that do not match the body) with HTTP 400, and the client acts on that code.
      std::string why = "the upstream " + spec_.url + " answered HTTP " + std::to_string(status);
      int64_t code = -32000;
      const auto doc = sdk::parse_json(whole);
      const rapidjson::Value* error = doc && doc->IsObject() ? sdk::member(*doc, "error") : nullptr;
      if (error != nullptr && error->IsObject()) {
        why += ": " + std::string(sdk::string_member(*error, "message").value_or(""));
        const rapidjson::Value* given = sdk::member(*error, "code");
        if (given != nullptr && given->IsInt64()) code = given->GetInt64();
      }
      return deliver(make_error(id, code, why));
    }
    if (!sse) {
      if (!whole.empty()) deliver(whole);
      if (ec) fail_request(id, "the upstream " + spec_.url + " broke off its answer: " + ec.message());
      return;
    }
    // An SSE stream that ended: if it never carried our answer, the request fails (the
    // connection ignores this when the answer did arrive).
    fail_request(id, ec ? "the upstream " + spec_.url + " broke off its answer: " + ec.message()
                        : "the upstream " + spec_.url + " ended its answer stream without answering");
  }

  // The GET stream for messages outside any request; a server without one answers 405.
  void listen() {
    exchange x(*this);
    if (x.connect()) return;
    auto req = make(http::verb::get);
    req.set(http::field::accept, "text/event-stream");
    beast::error_code ec;
    http::write(x.socket(), req, ec);
    if (!ec) read_answer(x, "");
  }

  void deliver(std::string_view message_text) {
    if (events_.on_message) events_.on_message(message_text);
  }

  void fail_request(const std::string& id, const std::string& why) { deliver(make_error(id, -32000, why)); }

  void fail_closed(const std::string& why) {
    {
      std::lock_guard lock(mutex_);
      if (closed_) return;
    }
    end(why);
  }

  void end(const std::string& why) {
    std::call_once(ended_, [&] {
      if (events_.on_closed) events_.on_closed(why);
    });
  }

  // A last, best-effort DELETE that ends the session (the transport is closed by now, so
  // this uses a socket of its own).
  void end_session(const std::string& session) {
    net::io_context io;
    tcp::socket socket(io);
    beast::error_code ec;
    tcp::resolver resolver(io);
    auto endpoints = resolver.resolve(url_.host, url_.port, ec);
    if (ec) return;
    net::connect(socket, endpoints, ec);
    if (ec) return;
    http::request<http::string_body> req{http::verb::delete_, url_.target, 11};
    req.set(http::field::host, url_.host + ":" + url_.port);
    req.set("Mcp-Session-Id", session);
    http::write(socket, req, ec);
    if (ec) return;
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(socket, buffer, res, ec);
  }

  upstream_spec spec_;
  parsed_url url_;
  transport_events events_;
  std::mutex mutex_;
  bool closed_ = false;
  std::string session_id_;
  std::string protocol_version_;
  bool stateless_ = false;                         // 2026-07-28 was chosen
  std::shared_ptr<const tool_annotations> tools_;  // what tools/call mirrors (mirror_arguments)
  std::set<int> sockets_;
  std::map<std::string, int> request_sockets_;  // request id (JSON) -> the socket of its POST
  std::list<worker> threads_;
  std::once_flag ended_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<transport>> make_http_transport(const upstream_spec& spec) {
  auto url = parse_url(spec.url);
  if (!url.ok()) return url.status();
  return std::unique_ptr<transport>(std::make_unique<http_transport>(spec, std::move(*url)));
}

}  // namespace toolhost::mcp_client
