#include "host/transport/http_security.hpp"

#include <toolhost/sdk/strings.hpp>

#include <algorithm>
#include <cctype>

#include <charconv>
#include <boost/asio/ip/address.hpp>
#include <openssl/crypto.h>

namespace toolhost::transport::http {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }
bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "name:port", "[v6]:port" or "name" -> the name without brackets; empty when malformed.
std::string host_part(std::string_view authority) {
  if (authority.empty()) return {};
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return {};
    std::string_view rest = authority.substr(close + 1);
    if (!rest.empty() && rest.front() != ':') return {};
    return std::string(authority.substr(1, close - 1));
  }
  const size_t colon = authority.find(':');
  if (colon != std::string_view::npos && authority.find(':', colon + 1) != std::string_view::npos) {
    return std::string(authority);  // a bare IPv6 address
  }
  return std::string(authority.substr(0, colon));
}

}  // namespace

bool is_loopback_name(std::string_view host) {
  const std::string h = lower(host);
  if (h == "localhost" || ends_with(h, ".localhost")) return true;
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(h, ec);
  return !ec && address.is_loopback();
}

absl::StatusOr<bind_address> parse_bind(std::string_view text, bool allow_unsafe) {
  bind_address out;
  std::string_view port_text;
  if (!text.empty() && text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return absl::InvalidArgumentError(cat("--http wants HOST:PORT (for IPv6, [ADDRESS]:PORT), not '", text, "'"));
    }
    out.host = std::string(text.substr(1, close - 1));
    port_text = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || text.find(':') != colon) {
      return absl::InvalidArgumentError(cat("--http wants HOST:PORT, e.g. 127.0.0.1:8808, not '", text, "'"));
    }
    out.host = std::string(text.substr(0, colon));
    port_text = text.substr(colon + 1);
  }
  uint32_t port = 0;
  const auto [end, ec_port] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec_port != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return absl::InvalidArgumentError(cat("--http: '", port_text, "' is not a port number (0-65535)"));
  }
  out.port = static_cast<unsigned short>(port);
  if (lower(out.host) == "localhost") out.host = "127.0.0.1";
  boost::system::error_code ec;
  const auto address = boost::asio::ip::make_address(out.host, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        cat("--http: '", out.host, "' is not an IP address; give one, e.g. 127.0.0.1 or [::1]"));
  }
  out.loopback = address.is_loopback();
  if (!out.loopback && !allow_unsafe) {
    return absl::PermissionDeniedError(
        cat("refusing to serve HTTP on ", text, ": it is not a loopback address, so every machine that can reach it "
            "could call this server's tools. Listen on 127.0.0.1 (or [::1]), or pass --unsafe-http to accept the "
            "risk (and set a token with --token or TOOLHOST_TOKEN)"));
  }
  return out;
}

request_guard::request_guard(std::string token, std::vector<std::string> allowed_origins, bool open_host)
    : token_(std::move(token)), allowed_origins_(std::move(allowed_origins)), open_host_(open_host) {
  for (auto& o : allowed_origins_) o = lower(o);
}

bool request_guard::host_allowed(std::string_view host) const {
  if (open_host_) return true;
  const std::string name = host_part(host);
  return !name.empty() && is_loopback_name(name);
}

bool request_guard::origin_allowed(std::string_view origin) const {
  if (origin.empty()) return true;
  const std::string text = lower(origin);
  if (std::find(allowed_origins_.begin(), allowed_origins_.end(), text) != allowed_origins_.end()) return true;
  std::string_view rest = text;
  if (starts_with(rest, "http://")) {
    rest.remove_prefix(7);
  } else if (starts_with(rest, "https://")) {
    rest.remove_prefix(8);
  } else {
    return false;  // "null" and other schemes: never loopback
  }
  if (const size_t slash = rest.find('/'); slash != std::string_view::npos) rest = rest.substr(0, slash);
  const std::string name = host_part(rest);
  return !name.empty() && is_loopback_name(name);
}

bool request_guard::authorized(std::string_view authorization) const {
  if (token_.empty()) return true;
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() ||
      lower(authorization.substr(0, kScheme.size())) != kScheme) {
    return false;
  }
  // The comparison always runs over the whole token, whatever was given, so its time says nothing
  // about how much of a guess was right.
  std::string given(authorization.substr(kScheme.size()));
  const bool same_length = given.size() == token_.size();
  given.resize(token_.size(), '\0');
  return (CRYPTO_memcmp(given.data(), token_.data(), token_.size()) == 0) & same_length;
}

}  // namespace toolhost::transport::http
