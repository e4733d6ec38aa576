// The checks every Streamable HTTP request passes before it reaches a session: where the server
// may listen, the framing rules of RFC 9112 that Beast leaves to its user, which Host and Origin
// headers are acceptable (DNS-rebinding protection), and the optional bearer token.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <absl/status/statusor.h>
#include <boost/beast/http/fields.hpp>

namespace toolhost::transport::http {

// HOST:PORT as given on the command line; [v6]:PORT for IPv6.
struct bind_address {
  std::string host;  // as written, without brackets
  unsigned short port = 0;
  bool loopback = false;
};

// Parses and resolves `text`; a non-loopback address is refused unless `allow_unsafe`, with a
// message that says why and what to do.
absl::StatusOr<bind_address> parse_bind(std::string_view text, bool allow_unsafe);

class request_guard {
 public:
  // `token` empty: no token required. `open_host`: any Host header is accepted (the server
  // listens on a non-loopback address on purpose).
  request_guard(std::string token, std::vector<std::string> allowed_origins, bool open_host);

  // The Host header names this machine's loopback interface (any port), or open_host. A
  // malformed one (see valid_host_header) is never allowed.
  bool host_allowed(std::string_view host) const;
  // No Origin (not a browser), a loopback origin, or one the config allows.
  bool origin_allowed(std::string_view origin) const;
  // The Authorization header carries the token (compared in constant time).
  bool authorized(std::string_view authorization) const;
  bool needs_token() const { return !token_.empty(); }

 private:
  std::string token_;  // empty when none is required
  std::vector<std::string> allowed_origins_;
  bool open_host_;
};

// Why a request head is refused before its body is read; the connection closes after the
// answer, since its framing cannot be trusted.
struct head_refusal {
  unsigned status = 400;
  std::string message;
};

// RFC 9112: exactly one Host (3.2), at most one Origin (RFC 6454 7.3), and a Transfer-Encoding
// that is exactly "chunked" without a Content-Length beside it (6.1, 6.3; an unknown coding is
// 501, a final coding other than chunked or both headers together 400: either way the body's
// length is unknown, the stuff request smuggling is made of).
std::optional<head_refusal> check_request_head(const boost::beast::http::fields& head);

// True for localhost, 127.0.0.0/8 and ::1 (a host name without port or brackets).
bool is_loopback_name(std::string_view host);

// RFC 9110 7.2: Host is uri-host [":" port], nothing else: no userinfo ("localhost:1@evil.com"
// names evil.com to some parsers and localhost to others), no path, no spaces. A request with
// an invalid one gets 400 (RFC 9112 3.2).
bool valid_host_header(std::string_view host);

}  // namespace toolhost::transport::http
