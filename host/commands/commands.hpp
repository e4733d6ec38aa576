// What toolhost does: serve a server (stdio or HTTP), list plugins or tools, check the config.
#pragma once

#include "host/cli.hpp"

namespace toolhost::commands {

// Each returns the process exit code.
int serve(const cli::options& options);
int plugins(const cli::options& options);
int tools(const cli::options& options);
int check_config(const cli::options& options);

}  // namespace toolhost::commands
