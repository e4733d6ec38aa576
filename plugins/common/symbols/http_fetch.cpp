// One GET, written as a coroutine over Asio so that every step can be given up on by a
// watchdog: DNS, connect, TLS and reads have no timeout of their own when run synchronously.
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it

#include "toolhost/symbols/http_fetch.hpp"

#include <cstdlib>
#include <fstream>
#include <optional>

#include <absl/strings/ascii.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <absl/strings/str_split.h>
#include <openssl/ssl.h>
#include <boost/asio.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/core/detail/base64.hpp>
#include <boost/beast/http.hpp>

namespace toolhost::symbols {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

namespace {

constexpr int kMaxRedirects = 5;
constexpr auto kTick = std::chrono::milliseconds(50);
constexpr const char* kUserAgent = "Microsoft-Symbol-Server/10.0.0.0 (toolhost)";

struct url_parts {
  std::string scheme, host, port, target;
  bool tls() const { return scheme == "https"; }
};

absl::StatusOr<url_parts> parse_url(const std::string& url) {
  url_parts u;
  const size_t colon = url.find("://");
  if (colon == std::string::npos) return absl::InvalidArgumentError("'" + url + "' is not a URL");
  u.scheme = absl::AsciiStrToLower(url.substr(0, colon));
  if (u.scheme != "http" && u.scheme != "https") {
    return absl::InvalidArgumentError("'" + url + "': only http and https URLs are fetched");
  }
  std::string rest = url.substr(colon + 3);
  const size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  u.target = slash == std::string::npos ? "/" : rest.substr(slash);
  if (const size_t at = authority.rfind('@'); at != std::string::npos) authority = authority.substr(at + 1);
  if (!authority.empty() && authority[0] == '[') {
    const size_t close = authority.find(']');
    if (close == std::string::npos) return absl::InvalidArgumentError("'" + url + "' has a bad IPv6 address");
    u.host = authority.substr(1, close - 1);
    if (close + 1 < authority.size() && authority[close + 1] == ':') u.port = authority.substr(close + 2);
  } else if (const size_t c = authority.rfind(':'); c != std::string::npos) {
    u.host = authority.substr(0, c);
    u.port = authority.substr(c + 1);
  } else {
    u.host = authority;
  }
  if (u.host.empty()) return absl::InvalidArgumentError("'" + url + "' names no host");
  if (u.port.empty()) u.port = u.tls() ? "443" : "80";
  return u;
}

// user:password of a proxy URL, as a Basic credential; "" when there is none.
std::string proxy_credentials(const std::string& proxy) {
  const size_t colon = proxy.find("://");
  const std::string rest = colon == std::string::npos ? proxy : proxy.substr(colon + 3);
  const size_t at = rest.find('@');
  if (at == std::string::npos || rest.find('/') < at) return "";
  const std::string user = rest.substr(0, at);
  std::string out(beast::detail::base64::encoded_size(user.size()), '\0');
  out.resize(beast::detail::base64::encode(out.data(), user.data(), user.size()));
  return "Basic " + out;
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || absl::StartsWith(host, "127.");
}

// The proxy for `u` from the environment, or "".
std::string proxy_for(const url_parts& u) {
  if (is_loopback(u.host)) return "";
  for (const char* name : {"NO_PROXY", "no_proxy"}) {
    const char* v = std::getenv(name);
    if (v == nullptr) continue;
    for (absl::string_view entry : absl::StrSplit(v, ',')) {
      std::string e = absl::AsciiStrToLower(std::string(absl::StripAsciiWhitespace(entry)));
      if (e.empty()) continue;
      if (e == "*") return "";
      if (e[0] == '.') e.erase(0, 1);
      const std::string host = absl::AsciiStrToLower(u.host);
      if (host == e || absl::EndsWith(host, "." + e)) return "";
    }
  }
  const char* names[2] = {u.tls() ? "HTTPS_PROXY" : "HTTP_PROXY", u.tls() ? "https_proxy" : "http_proxy"};
  for (const char* name : names) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return v;
  }
  return "";
}

// Gives up on every pending operation when the idle time passes or the caller cancels.
class watchdog {
 public:
  watchdog(asio::io_context& ioc, const http_options& o) : timer_(ioc), options_(o) { kick(); }
  void kick() { deadline_ = std::chrono::steady_clock::now() + options_.timeout; }
  void start(std::function<void()> abort) {
    abort_ = std::move(abort);
    arm();
  }
  void stop() {
    stopped_ = true;
    timer_.cancel();
  }
  bool timed_out() const { return timed_out_; }
  bool cancelled() const { return cancelled_; }

 private:
  void arm() {
    timer_.expires_after(kTick);
    timer_.async_wait([this](const boost::system::error_code& ec) {
      if (ec || stopped_) return;
      if (options_.cancelled && options_.cancelled()) {
        cancelled_ = true;
      } else if (std::chrono::steady_clock::now() > deadline_) {
        timed_out_ = true;
      } else {
        arm();
        return;
      }
      if (abort_) abort_();
    });
  }

  asio::steady_timer timer_;
  const http_options& options_;
  std::chrono::steady_clock::time_point deadline_;
  std::function<void()> abort_;
  bool timed_out_ = false, cancelled_ = false, stopped_ = false;
};

// Where the body goes: a file or a string.
struct sink {
  std::ofstream* file = nullptr;
  std::string* text = nullptr;
  uint64_t limit = 0;
  bool write(const char* data, size_t n) {
    if (file != nullptr) return static_cast<bool>(file->write(data, static_cast<std::streamsize>(n)));
    if (text->size() + n > limit) return false;
    text->append(data, n);
    return true;
  }
};

struct attempt {
  std::optional<absl::Status> error;
  int status = 0;
  std::string location;  // of a redirect
  uint64_t bytes = 0;
};

template <typename Stream>
asio::awaitable<void> exchange(Stream& stream, const url_parts& u, const std::string& request_target,
                               const std::string& proxy_auth, bool via_proxy, sink& out, const http_options& o,
                               watchdog& dog, attempt& a) {
  http::request<http::empty_body> req{http::verb::get, request_target, 11};
  req.set(http::field::host, u.host);
  req.set(http::field::user_agent, kUserAgent);
  req.set(http::field::accept, "*/*");
  req.set(http::field::connection, "close");
  if (via_proxy && !proxy_auth.empty()) req.set(http::field::proxy_authorization, proxy_auth);
  dog.kick();
  co_await http::async_write(stream, req, asio::use_awaitable);
  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(o.max_bytes);
  dog.kick();
  co_await http::async_read_header(stream, buffer, parser, asio::use_awaitable);
  a.status = parser.get().result_int();
  if (a.status >= 300 && a.status < 400) {
    a.location = std::string(parser.get()[http::field::location]);
    co_return;
  }
  const uint64_t total = parser.content_length().value_or(0);
  if (total > o.max_bytes) {
    a.error = absl::ResourceExhaustedError(
        absl::StrCat("the answer is ", total, " bytes, more than the ", o.max_bytes, " allowed"));
    co_return;
  }
  std::vector<char> chunk(64 * 1024);
  while (!parser.is_done()) {
    parser.get().body().data = chunk.data();
    parser.get().body().size = chunk.size();
    dog.kick();
    boost::system::error_code ec;
    co_await http::async_read_some(stream, buffer, parser, asio::redirect_error(asio::use_awaitable, ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) throw boost::system::system_error(ec);
    const size_t n = chunk.size() - parser.get().body().size;
    if (n > 0 && !out.write(chunk.data(), n)) {
      a.error = absl::ResourceExhaustedError("the answer is larger than allowed, or could not be written");
      co_return;
    }
    a.bytes += n;
    if (o.progress) o.progress(a.bytes, total);
  }
}

asio::awaitable<void> one_request(asio::io_context& ioc, const url_parts& u, sink& out, const http_options& o,
                                  watchdog& dog, attempt& a) {
  auto ex = co_await asio::this_coro::executor;
  const std::string proxy = proxy_for(u);
  url_parts connect_to = u;
  if (!proxy.empty()) {
    auto p = parse_url(proxy.find("://") == std::string::npos ? "http://" + proxy : proxy);
    if (!p.ok() || p->tls()) {
      a.error = absl::InvalidArgumentError("the proxy '" + proxy + "' is not an http:// proxy URL");
      co_return;
    }
    connect_to = *p;
  }
  tcp::resolver resolver(ex);
  tcp::socket socket(ex);
  dog.start([&] {
    resolver.cancel();
    boost::system::error_code ignored;
    socket.close(ignored);
  });
  dog.kick();
  auto endpoints = co_await resolver.async_resolve(connect_to.host, connect_to.port, asio::use_awaitable);
  dog.kick();
  co_await asio::async_connect(socket, endpoints, asio::use_awaitable);
  const std::string auth = proxy.empty() ? "" : proxy_credentials(proxy);
  if (!u.tls()) {
    // Through an HTTP proxy, the request names the whole URL.
    const std::string target = proxy.empty() ? u.target : "http://" + u.host + ":" + u.port + u.target;
    co_await exchange(socket, u, target, auth, !proxy.empty(), out, o, dog, a);
    co_return;
  }
  if (!proxy.empty()) {
    // CONNECT through the proxy, then TLS inside the tunnel.
    http::request<http::empty_body> req{http::verb::connect, u.host + ":" + u.port, 11};
    req.set(http::field::host, u.host + ":" + u.port);
    req.set(http::field::user_agent, kUserAgent);
    if (!auth.empty()) req.set(http::field::proxy_authorization, auth);
    dog.kick();
    co_await http::async_write(socket, req, asio::use_awaitable);
    beast::flat_buffer buffer;
    http::response_parser<http::empty_body> parser;
    parser.skip(true);  // a CONNECT answer has no body
    dog.kick();
    co_await http::async_read_header(socket, buffer, parser, asio::use_awaitable);
    if (parser.get().result_int() != 200) {
      a.error = absl::UnavailableError(
          absl::StrCat("the proxy ", proxy, " refused the tunnel (", parser.get().result_int(), ")"));
      co_return;
    }
  }
  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_default_verify_paths();
  ctx.set_verify_mode(asio::ssl::verify_peer);
  asio::ssl::stream<tcp::socket&> tls(socket, ctx);
  tls.set_verify_callback(asio::ssl::host_name_verification(u.host));
  SSL_set_tlsext_host_name(tls.native_handle(), u.host.c_str());
  dog.kick();
  co_await tls.async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
  co_await exchange(tls, u, u.target, auth, false, out, o, dog, a);
}

absl::StatusOr<http_response> get(const std::string& start_url, sink& out, const http_options& o,
                                  const std::function<void()>& restart) {
  std::string url = start_url;
  for (int redirect = 0;; ++redirect) {
    auto u = parse_url(url);
    if (!u.ok()) return u.status();
    asio::io_context ioc;
    watchdog dog(ioc, o);
    attempt a;
    std::exception_ptr failure;
    asio::co_spawn(ioc, one_request(ioc, *u, out, o, dog, a), [&](std::exception_ptr e) {
      failure = e;
      dog.stop();
    });
    ioc.run();
    if (dog.cancelled()) return absl::CancelledError("the download of " + url + " was cancelled");
    if (dog.timed_out()) {
      return absl::DeadlineExceededError(absl::StrCat(url, " did not answer within ", o.timeout.count(), " ms"));
    }
    if (failure) {
      try {
        std::rethrow_exception(failure);
      } catch (const boost::system::system_error& e) {
        return absl::UnavailableError(url + " cannot be reached: " + e.code().message());
      } catch (const std::exception& e) {
        return absl::UnavailableError(url + " cannot be reached: " + e.what());
      }
    }
    if (a.error) return absl::Status(a.error->code(), url + ": " + std::string(a.error->message()));
    if (a.status >= 300 && a.status < 400 && !a.location.empty()) {
      if (redirect >= kMaxRedirects) return absl::UnavailableError(url + " redirects more than 5 times");
      // A relative Location is resolved against the URL that sent it.
      if (a.location.find("://") == std::string::npos) {
        const size_t scheme = url.find("://");
        const size_t path = url.find('/', scheme + 3);
        a.location = (a.location[0] == '/' ? url.substr(0, path) : url.substr(0, url.rfind('/') + 1)) + a.location;
      }
      url = a.location;
      restart();
      continue;
    }
    return http_response{a.status, url, a.bytes};
  }
}

}  // namespace

absl::StatusOr<http_response> http_get_file(const std::string& url, const std::string& path,
                                            const http_options& options) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) return absl::PermissionDeniedError("cannot write " + path);
  sink out{&file, nullptr, options.max_bytes};
  auto r = get(url, out, options, [&] {
    file.close();
    file.open(path, std::ios::binary | std::ios::trunc);
  });
  file.close();
  return r;
}

absl::StatusOr<std::pair<http_response, std::string>> http_get_text(const std::string& url, const http_options& options,
                                                                    size_t limit) {
  std::string text;
  sink out{nullptr, &text, limit};
  auto r = get(url, out, options, [&] { text.clear(); });
  if (!r.ok()) return r.status();
  return std::make_pair(*r, std::move(text));
}

}  // namespace toolhost::symbols
