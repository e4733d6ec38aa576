// The three things toolhost does: serve a server over stdio, list plugins, check the config.
#pragma once

#include "host/cli.hpp"

namespace toolhost::commands {

// Each returns the process exit code.
int serve(const cli::options& options);
int plugins(const cli::options& options);
int check_config(const cli::options& options);

}  // namespace toolhost::commands
