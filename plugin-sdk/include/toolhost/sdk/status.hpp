// SPDX-License-Identifier: Apache-2.0
// toolhost SDK: the one mapping between absl::Status and toolhost_status_t.
//
// Plugins, the SDK's trampolines and the host all cross the boundary through these functions, so
// a status means the same on both sides: Unimplemented <-> TOOLHOST_ERR_UNSUPPORTED,
// DeadlineExceeded <-> TOOLHOST_ERR_TIMEOUT, FailedPrecondition <-> TOOLHOST_ERR_WRONG_STATE...
// Codes with no counterpart in plugin.h become TOOLHOST_ERR_INTERNAL; the message travels
// separately, through an error writer.
#pragma once

#include <string>
#include <string_view>

#include <absl/status/status.h>

#include <toolhost/plugin.h>
#include <toolhost/sdk/writer.hpp>

namespace toolhost::sdk {

// The code an absl::StatusCode crosses the ABI as.
constexpr toolhost_status_t to_status_code(absl::StatusCode code) noexcept {
  switch (code) {
    case absl::StatusCode::kOk: return TOOLHOST_OK;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange: return TOOLHOST_ERR_INVALID_ARGUMENT;
    case absl::StatusCode::kAlreadyExists: return TOOLHOST_ERR_ALREADY_EXISTS;
    case absl::StatusCode::kNotFound: return TOOLHOST_ERR_NOT_FOUND;
    case absl::StatusCode::kFailedPrecondition: return TOOLHOST_ERR_WRONG_STATE;
    case absl::StatusCode::kUnimplemented: return TOOLHOST_ERR_UNSUPPORTED;
    case absl::StatusCode::kCancelled: return TOOLHOST_ERR_CANCELLED;
    case absl::StatusCode::kDeadlineExceeded: return TOOLHOST_ERR_TIMEOUT;
    default: return TOOLHOST_ERR_INTERNAL;
  }
}

// The absl::StatusCode a toolhost_status_t stands for. TOOLHOST_ERR_REMOTE (the client answered
// with a JSON-RPC error) is kUnknown: an error from another address space, in Abseil's words.
constexpr absl::StatusCode to_absl_code(toolhost_status_t code) noexcept {
  switch (code) {
    case TOOLHOST_OK: return absl::StatusCode::kOk;
    case TOOLHOST_ERR_INVALID_ARGUMENT: return absl::StatusCode::kInvalidArgument;
    case TOOLHOST_ERR_ALREADY_EXISTS: return absl::StatusCode::kAlreadyExists;
    case TOOLHOST_ERR_NOT_FOUND: return absl::StatusCode::kNotFound;
    case TOOLHOST_ERR_WRONG_STATE: return absl::StatusCode::kFailedPrecondition;
    case TOOLHOST_ERR_UNSUPPORTED: return absl::StatusCode::kUnimplemented;
    case TOOLHOST_ERR_CANCELLED: return absl::StatusCode::kCancelled;
    case TOOLHOST_ERR_TIMEOUT: return absl::StatusCode::kDeadlineExceeded;
    case TOOLHOST_ERR_REMOTE: return absl::StatusCode::kUnknown;
    default: return absl::StatusCode::kInternal;
  }
}

// Writes the status's message into `error` (may be null) and returns its code: the tail of every
// C function that reports a failed absl::Status.
inline toolhost_status_t fail(toolhost_writer_t* error, const absl::Status& status) noexcept {
  if (!status.ok()) {
    const auto message = status.message();
    write(error, std::string_view(message.data(), message.size()));
  }
  return to_status_code(status.code());
}

// The absl::Status for a code that came across the ABI with `message` (what the other side
// wrote into the error writer); `fallback` stands in for an empty message.
inline absl::Status status_from(toolhost_status_t code, std::string_view message, std::string_view fallback = {}) {
  if (code == TOOLHOST_OK) return absl::OkStatus();
  const std::string_view text = message.empty() ? fallback : message;
  return absl::Status(to_absl_code(code), absl::string_view(text.data(), text.size()));
}

}  // namespace toolhost::sdk
