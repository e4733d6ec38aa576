// Asking the Eleven window which file is open, over its bridge socket (ELEVEN_BRIDGE).
//
// One JSON line each way, as the Eleven document describes:
//   {"id":1,"tool":"current_view","args":{},"from":{"agent":..,"chat":..}}
//   {"id":1,"ok":true,"text":"{\"file\":\"/Applications/Example.app\",...}"}
// gpu_profile uses the file to find the recordings folder next to it.
#pragma once

#include <chrono>
#include <string>

#include <absl/status/statusor.h>

namespace toolhost::gpu_profile {

// The path of the file open in the window. An error carries one sentence: the window's own
// error text (e.g. "No file is open in Eleven. ...") or what went wrong on the socket.
absl::StatusOr<std::string> open_file_from_bridge(const std::string& socket_path, const std::string& agent,
                                                  const std::string& chat,
                                                  std::chrono::milliseconds timeout = std::chrono::seconds(5));

}  // namespace toolhost::gpu_profile
