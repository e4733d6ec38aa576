// A plugin's settings checked against the schema it declared (toolhost_registry_t's
// declare_settings), before the plugin reads them: a misspelt key or a value out of range is
// refused with the place it was written, like every other line of the config.
#pragma once

#include <string_view>

#include <absl/status/status.h>

#include "host/config/config.hpp"

namespace toolhost::plugins {

struct settings_subject {
  std::string_view plugin;  // the plugin id
  std::string_view server;  // the server it starts for
  bool listing = false;     // `toolhost plugins`: an empty table passes whatever is required
};

// OK, or InvalidArgument with one sentence: "<where>: servers.S.settings.P.KEY: <what is wrong>".
absl::Status check_settings(std::string_view schema_json, std::string_view settings_json,
                            const config::settings_origin& origin, const settings_subject& who);

}  // namespace toolhost::plugins
