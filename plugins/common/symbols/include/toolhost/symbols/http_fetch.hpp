// Fetching a file over HTTP or HTTPS (Boost.Beast, OpenSSL with the system's CA store), as a
// symbol server is asked: redirects followed, a proxy from HTTPS_PROXY / HTTP_PROXY (never for
// loopback addresses or NO_PROXY hosts), an idle timeout, progress and cancellation.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include <absl/status/statusor.h>

namespace toolhost::symbols {

struct http_options {
  // The longest wait for any one step (resolve, connect, handshake, a read); a stalled
  // download fails within it.
  std::chrono::milliseconds timeout{20000};
  uint64_t max_bytes = 4ull << 30;  // a response larger than this is refused
  // (bytes so far, total or 0 when the server does not say)
  std::function<void(uint64_t, uint64_t)> progress;
  std::function<bool()> cancelled;  // polled while waiting
};

struct http_response {
  int status = 0;      // the final response's status (after redirects)
  std::string url;     // the URL that answered
  uint64_t bytes = 0;  // body bytes written
};

// GETs `url` into the file `path` (created or truncated; left with the body of whatever status
// came back). Errors: Unavailable (cannot connect: refused, unreachable, DNS, TLS),
// DeadlineExceeded (the timeout passed), Cancelled, InvalidArgument (a URL or proxy it cannot
// use), ResourceExhausted (larger than max_bytes); each names the URL.
absl::StatusOr<http_response> http_get_file(const std::string& url, const std::string& path,
                                            const http_options& options);

// The same into memory, for small answers (file.ptr); at most `limit` bytes.
absl::StatusOr<std::pair<http_response, std::string>> http_get_text(const std::string& url, const http_options& options,
                                                                    size_t limit = 64 * 1024);

}  // namespace toolhost::symbols
