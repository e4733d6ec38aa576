// `toolhost check-config`: reads the configuration, starts every enabled server's plugins without
// serving, and reports every problem, including those only the plugins' registrations reveal.
#include <cstdlib>
#include <set>
#include <sstream>

#include <absl/strings/str_join.h>
#include <toolhost/sdk/strings.hpp>

#include "host/commands/commands.hpp"
#include "host/commands/setup.hpp"
#include "host/mcp/server.hpp"
#include "host/plugins/loader.hpp"
#include "host/policy/permission_rows.hpp"
#include "host/transport/stdio.hpp"

namespace toolhost::commands {

int check_config(const cli::options& o) {
  const int out_fd = transport::take_stdout();
  std::ostringstream out;
  auto cfg = load_config(o);
  if (!cfg) return 2;
  plugins::loader loader(cfg->plugin_dirs);
  int problems = 0;
  std::set<std::string> said;  // several servers may report the same global row
  auto report = [&](const policy::row_problem& p) {
    if (!said.insert(p.source).second) return;
    out << (p.error ? "" : "warning: ") << p.message << "\n";
    if (p.error) ++problems;
  };
  size_t plugin_count = 0;
  policy::known_kinds all;
  all.scope = "any enabled server";
  for (const auto& s : cfg->servers) {
    if (!s.enabled) continue;
    for (const auto& id : s.plugins) {
      plugins::library* lib = loader.find(id);
      if (lib == nullptr) {
        out << s.source << ": server '" << s.name << "': plugin '" << id << "' is not in "
            << absl::StrJoin(cfg->plugin_dirs, ", ") << "\n";
        ++problems;
      }
    }
    config::server checked = s;  // TOOLHOST_HOST_CHECKING: upstreams start offline and stop again
    checked.checking = true;
    mcp::server srv(*cfg, checked, loader);
    srv.load_now();
    for (const auto& inst : srv.instances()) {
      ++plugin_count;
      if (inst->status() == plugins::load_status::bad_settings) {
        out << inst->message() << "\n";  // it starts with the place of the setting and names the server
        ++problems;
      } else if (inst->status() != plugins::load_status::loaded) {
        out << s.source << ": server '" << s.name << "': " << inst->message() << "\n";
        ++problems;
      }
    }
    // Isolated plugins start in their processes; what did not start is known by id.
    for (const auto& g : srv.groups()) {
      for (const auto& id : g->plugins()) {
        ++plugin_count;
        for (const auto& f : srv.failed_plugins()) {
          if (f.id != id) continue;
          out << (f.message.rfind(s.source.substr(0, s.source.find(':')), 0) == 0
                      ? ""
                      : s.source + ": server '" + s.name + "': ")
              << f.message << "\n";
          ++problems;
        }
      }
    }
    for (const auto& p : srv.config_problems()) report(p);
    for (const auto& k : srv.registry().kinds()) all.ids.push_back(k.id);
    for (auto& id : srv.plugins_not_started()) all.not_started.push_back(id);
    srv.shutdown();
  }
  // Global rows and --allow/--deny/--ask name a kind of some enabled server.
  for (const auto* rows : {&cfg->permissions, &cfg->run_permissions}) {
    for (const auto& p : policy::unknown_rows(*rows, all)) report(p);
  }
  for (const auto& lib : loader.libraries()) {
    switch (lib->status) {
      case plugins::load_status::untrusted:
      case plugins::load_status::not_shared_library:
      case plugins::load_status::missing_symbol:
      case plugins::load_status::no_entry_symbol:
      case plugins::load_status::wrong_abi:
      case plugins::load_status::bad_entry:
      case plugins::load_status::duplicate_id:
        out << lib->message << "\n";
        ++problems;
        break;
      default: break;
    }
  }
  const std::string name = cfg->files();
  if (problems > 0) {
    out << name << ": " << problems << " problem" << (problems == 1 ? "" : "s") << "\n";
    emit(out_fd, out.str());
    std::_Exit(1);
  }
  out << name << ": OK (" << cfg->servers.size() << " servers, " << plugin_count << " plugin instances started)\n";
  emit(out_fd, out.str());
  std::_Exit(0);
}

}  // namespace toolhost::commands
