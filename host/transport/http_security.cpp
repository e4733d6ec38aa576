#include "host/transport/http_security.hpp"

#include <toolhost/sdk/strings.hpp>

#include <algorithm>
#include <cctype>

#include <charconv>
#include <optional>
#include <vector>

#include <openssl/crypto.h>
#include <boost/asio/ip/address.hpp>

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

bool is_reg_name_char(char c) {
  // RFC 3986 unreserved characters; percent-encoding and sub-delims never name a loopback host,
  // and refusing them keeps every parser that sees the header agreeing on the name.
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '-' || c == '.' || c == '_' || c == '~';
}

bool valid_port(std::string_view port) {
  if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string_view::npos) return false;
  uint32_t value = 0;
  std::from_chars(port.data(), port.data() + port.size(), value);
  return value <= 65535;
}

// "name", "name:port", "[v6]" or "[v6]:port" -> the name without brackets; nullopt when it is
// anything else.
std::optional<std::string> host_part(std::string_view authority) {
  if (authority.empty()) return std::nullopt;
  std::string_view name;
  std::string_view rest;
  if (authority.front() == '[') {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    name = authority.substr(1, close - 1);
    boost::system::error_code ec;
    boost::asio::ip::make_address_v6(std::string(name), ec);
    if (ec) return std::nullopt;
    rest = authority.substr(close + 1);
  } else {
    const size_t colon = authority.find(':');
    name = authority.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
    if (name.empty() || !std::all_of(name.begin(), name.end(), is_reg_name_char)) return std::nullopt;
  }
  if (!rest.empty() && (rest.front() != ':' || !valid_port(rest.substr(1)))) return std::nullopt;
  return std::string(name);
}

}  // namespace

bool valid_host_header(std::string_view host) { return host_part(host).has_value(); }

std::optional<head_refusal> check_request_head(const boost::beast::http::fields& head) {
  namespace bhttp = boost::beast::http;
  const size_t hosts = head.count(bhttp::field::host);
  if (hosts == 0) return head_refusal{400, "Bad Request: the request has no Host header"};
  if (hosts > 1) return head_refusal{400, "Bad Request: the request has more than one Host header"};
  const auto host = head[bhttp::field::host];
  if (!valid_host_header(std::string_view(host.data(), host.size()))) {
    return head_refusal{400, cat("Bad Request: Host '", std::string_view(host.data(), host.size()),
                                 "' is not a host name or address with an optional port")};
  }
  if (head.count(bhttp::field::origin) > 1) {
    return head_refusal{400, "Bad Request: the request has more than one Origin header"};
  }
  std::vector<std::string> codings;
  for (auto it = head.find(bhttp::field::transfer_encoding);
       it != head.end() && it->name() == bhttp::field::transfer_encoding; ++it) {
    std::string_view value(it->value().data(), it->value().size());
    while (!value.empty()) {
      const size_t comma = value.find(',');
      std::string_view item = value.substr(0, comma);
      value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
      while (!item.empty() && (item.front() == ' ' || item.front() == '\t')) item.remove_prefix(1);
      while (!item.empty() && (item.back() == ' ' || item.back() == '\t')) item.remove_suffix(1);
      codings.push_back(lower(item));
    }
  }
  if (codings.empty()) return std::nullopt;
  if (head.count(bhttp::field::content_length) != 0) {
    return head_refusal{400, "Bad Request: Transfer-Encoding and Content-Length together; send one of them"};
  }
  if (codings.back() != "chunked") {
    return head_refusal{400, cat("Bad Request: Transfer-Encoding '", codings.back(),
                                 "' leaves the body's length unknown; the last coding must be chunked")};
  }
  if (codings.size() == 1) return std::nullopt;
  if (std::find(codings.begin(), codings.end() - 1, "chunked") != codings.end() - 1) {
    return head_refusal{400, "Bad Request: Transfer-Encoding applies chunked more than once"};
  }
  return head_refusal{501, cat("Not Implemented: transfer coding '", codings.front(),
                               "'; send the body with Transfer-Encoding: chunked alone, or with Content-Length")};
}

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
        cat("refusing to serve HTTP on ", text,
            ": it is not a loopback address, so every machine that can reach it "
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
  const auto name = host_part(host);
  if (!name) return false;
  return open_host_ || is_loopback_name(*name);
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
  const auto name = host_part(rest);  // an Origin has no path, so a '/' makes it malformed
  return name && is_loopback_name(*name);
}

bool request_guard::authorized(std::string_view authorization) const {
  if (token_.empty()) return true;
  constexpr std::string_view kScheme = "bearer ";
  if (authorization.size() <= kScheme.size() || lower(authorization.substr(0, kScheme.size())) != kScheme) {
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
