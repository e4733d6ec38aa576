// toolhost: an MCP server host whose tools all come from shared-library plugins.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string_view>

#include <toolhost/plugin.h>

#include "host/cli.hpp"
#include "host/commands/commands.hpp"
#include "host/log.hpp"
#include "host/plugins/isolation/child_main.hpp"

int main(int argc, char** argv) {
  using namespace toolhost;
  // A child that runs isolated plugins for a parent toolhost (host/plugins/isolation), not a
  // command a person types: --help does not list it.
  if (argc == 2 && std::string_view(argv[1]).rfind(plugins::isolation::kChildFlag, 0) == 0) {
    return plugins::isolation::plugin_child(std::atoi(argv[1] + std::strlen(plugins::isolation::kChildFlag)));
  }
  auto options = cli::parse(argc, argv);
  if (!options.ok()) {
    std::cerr << "toolhost: " << options.status().message() << "\n";
    return 2;
  }
  if (options->log_level) {
    const std::string& l = *options->log_level;
    log::set_level(l == "debug"     ? log::level::debug
                   : l == "warning" ? log::level::warning
                   : l == "error"   ? log::level::error
                                    : log::level::info);
  }
  switch (options->cmd) {
    case cli::command::help: std::cout << cli::usage(); return 0;
    case cli::command::version:
      std::cout << "toolhost " << TOOLHOST_VERSION << " (plugin ABI " << TOOLHOST_ABI_MAJOR << "." << TOOLHOST_ABI_MINOR
                << ")\n";
      return 0;
    case cli::command::plugins: return commands::plugins(*options);
    case cli::command::tools: return commands::tools(*options);
    case cli::command::check_config: return commands::check_config(*options);
    case cli::command::serve: return commands::serve(*options);
  }
  return 0;
}
