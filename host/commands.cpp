#include "host/commands.hpp"

#include <toolhost/sdk/strings.hpp>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>
#include <absl/strings/str_split.h>
#include <boost/dll/runtime_symbol_info.hpp>

#include "host/config/config.hpp"
#include "host/log.hpp"
#include "host/mcp/server.hpp"
#include "host/plugins/loader.hpp"
#include "host/transport/http_server.hpp"
#include "host/transport/stdio.hpp"

namespace toolhost::commands {
namespace {

std::string exe_dir() { return boost::dll::program_location().parent_path().string(); }

// The configuration the options name, or the default one; errors already printed.
std::optional<config::config> load_config(const cli::options& o) {
  const std::string exe = exe_dir();
  std::string path = o.config_path.empty() ? config::default_path(exe) : o.config_path;
  absl::StatusOr<config::config> cfg =
      path.empty() ? config::parse("plugin_dirs = [\"{exe}/../plugins\"]\n", "", exe) : config::load(path, exe);
  if (!cfg.ok()) {
    std::cerr << "toolhost: " << cfg.status().message() << "\n";
    return std::nullopt;
  }
  // Folders from the command line and the environment come first: they are the user's choice
  // for this run.
  std::vector<std::string> dirs = o.plugin_dirs;
  if (const char* env = std::getenv("TOOLHOST_PLUGIN_PATH"); env != nullptr && *env != '\0') {
    for (auto part : absl::StrSplit(env, ':', absl::SkipEmpty())) dirs.emplace_back(part);
  }
  dirs.insert(dirs.end(), cfg->plugin_dirs.begin(), cfg->plugin_dirs.end());
  cfg->plugin_dirs = std::move(dirs);
  for (const std::string& spec : o.settings) {
    if (absl::Status s = config::override_setting(*cfg, spec); !s.ok()) {
      std::cerr << "toolhost: " << s.message() << "\n";
      return std::nullopt;
    }
  }
  return *std::move(cfg);
}

// A server made of every plugin the folders hold, for a config that declares none.
config::server all_plugins_server(plugins::loader& loader, std::string name) {
  loader.load_all();
  config::server s;
  s.name = std::move(name);
  s.source = "the command line";
  for (const auto& lib : loader.libraries()) {
    if (lib->status == plugins::load_status::loaded && !lib->id.empty()) s.plugins.push_back(lib->id);
  }
  return s;
}

std::atomic<bool> g_stop{false};

// Writes a command's output to the descriptor that was stdout before plugins loaded.
void emit(int fd, const std::string& text) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Blocks the stop signals in every thread and waits for them on one of its own.
void watch_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  std::thread([set] {
    int sig = 0;
    sigwait(&set, &sig);
    ::toolhost::log::info("main", cat("received signal ", sig, "; finishing"));
    g_stop = true;
  }).detach();
}

// Exits when the parent dies (MCP clients that crash leave no orphan behind).
void watch_parent() {
  const pid_t parent = getppid();
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) g_stop = true;  // it died before the prctl took effect
}

// `--http`: the named server at /mcp, or every enabled server at /NAME/mcp.
int serve_http(const cli::options& o, const config::config& cfg) {
  auto bind = transport::http::parse_bind(o.http, o.unsafe_http);
  if (!bind.ok()) {
    log::error("main", view(bind.status().message()));
    return 2;
  }
  transport::http::options opts;
  opts.bind = *bind;
  const char* env_token = std::getenv("TOOLHOST_TOKEN");
  opts.token = o.token ? *o.token : (env_token != nullptr && *env_token != '\0') ? env_token : cfg.http.token;
  opts.allowed_origins = cfg.http.allowed_origins;
  opts.max_body_bytes = cfg.http.max_body_bytes;

  plugins::loader loader(cfg.plugin_dirs);
  std::vector<std::pair<std::string, const config::server*>> chosen;  // path, server
  config::server implicit;
  if (cfg.servers.empty()) {
    implicit = all_plugins_server(loader, o.server.empty() ? "default" : o.server);
    chosen.emplace_back("/mcp", &implicit);
  } else if (!o.server.empty()) {
    const config::server* s = cfg.find_server(o.server);
    if (s == nullptr || !s->enabled) {
      log::error("main", s == nullptr ? cat("no server named '", o.server, "' in ", cfg.path.empty() ? "the config" : cfg.path)
                                      : cat("server '", o.server, "' is disabled (enabled = false at ", s->source, ")"));
      return 2;
    }
    chosen.emplace_back("/mcp", s);
  } else {
    for (const auto& s : cfg.servers) {
      if (s.enabled) chosen.emplace_back(cat("/", s.name, "/mcp"), &s);
    }
    if (chosen.empty()) {
      log::error("main", "no enabled server in the config; enable one or pass --server NAME");
      return 2;
    }
  }
  std::vector<std::unique_ptr<mcp::server>> servers;
  std::vector<transport::http::endpoint> endpoints;
  for (const auto& [path, settings] : chosen) {
    servers.push_back(std::make_unique<mcp::server>(cfg, *settings, loader));
    servers.back()->start_loading();
    endpoints.push_back({path, servers.back().get()});
  }
  const int code = transport::http::serve(opts, endpoints, [] { return g_stop.load(); });
  for (auto& srv : servers) {
    if (srv->workers().wait_idle(2000)) srv->shutdown();
  }
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace

int serve(const cli::options& o) {
  // Before any plugin loads: fd 1 becomes stderr, the protocol gets a private descriptor.
  const int protocol_fd = transport::take_stdout();
  if (protocol_fd < 0) {
    log::error("main", "cannot duplicate stdout for the protocol");
    return 1;
  }
  watch_signals();
  if (o.http.empty()) watch_parent();  // an HTTP server may outlive the shell that started it
  auto cfg = load_config(o);
  if (!cfg) return 2;
  if (!o.http.empty()) return serve_http(o, *cfg);

  plugins::loader loader(cfg->plugin_dirs);
  std::string name = o.server.empty() ? cfg->default_server : o.server;
  config::server implicit;
  const config::server* settings = nullptr;
  if (cfg->servers.empty()) {
    implicit = all_plugins_server(loader, name.empty() ? "default" : name);
    settings = &implicit;
  } else {
    if (name.empty() && cfg->servers.size() == 1) name = cfg->servers.front().name;
    settings = cfg->find_server(name);
    if (settings == nullptr) {
      std::vector<std::string> names;
      for (const auto& s : cfg->servers) names.push_back(s.name);
      log::error("main", cat(name.empty() ? "no server named; pass --server NAME"
                                                   : cat("no server named '", name, "' in ",
                                                                  cfg->path.empty() ? "the config" : cfg->path),
                                      " (servers: ", absl::StrJoin(names, ", "), ")"));
      return 2;
    }
    if (!settings->enabled) {
      log::error("main", cat("server '", name, "' is disabled (enabled = false at ", settings->source,
                                      "); enable it in the config to serve it"));
      return 2;
    }
  }

  mcp::server srv(*cfg, *settings, loader);
  srv.start_loading();
  log::info("main", cat("serving '", settings->name, "' on stdio"));
  const int code = transport::serve_stdio(srv, protocol_fd, [] { return g_stop.load(); });
  // Plugins are shut down only when no call still runs in them; otherwise leave without it.
  if (srv.workers().wait_idle(2000)) srv.shutdown();
  std::fflush(nullptr);
  std::_Exit(code);
}

int plugins(const cli::options& o) {
  // Plugins may print while they load: the table goes to the real stdout, their noise to stderr.
  const int table_fd = transport::take_stdout();
  std::ostringstream out;
  auto cfg = load_config(o);
  if (!cfg) return 2;
  plugins::loader loader(cfg->plugin_dirs);
  config::server settings;
  if (!o.server.empty()) {
    const config::server* s = cfg->find_server(o.server);
    if (s == nullptr) {
      std::cerr << "toolhost: no server named '" << o.server << "' in " << cfg->path << "\n";
      return 2;
    }
    settings = *s;
  } else {
    settings = all_plugins_server(loader, "(all plugins)");
  }
  settings.listing = true;
  loader.load_all();
  mcp::server srv(*cfg, settings, loader);
  srv.load_now();

  struct row {
    std::string plugin, version, abi, tools, kinds, transports, status;
  };
  std::vector<row> rows;
  std::vector<std::string> problems;
  auto joined = [&](const std::string& owner, auto const& items, auto name_of) {
    std::vector<std::string> names;
    for (const auto& item : items) {
      if (item.owner == owner) names.push_back(name_of(item));
    }
    return names.empty() ? std::string("-") : absl::StrJoin(names, ", ");
  };
  for (const auto& lib : loader.libraries()) {
    row r;
    r.plugin = lib->id.empty() ? std::filesystem::path(lib->path).filename().string() : lib->id;
    r.version = lib->version.empty() ? "-" : lib->version;
    r.abi = lib->entry != nullptr ? cat(lib->abi_major, ".", lib->abi_minor) : "-";
    r.tools = joined(lib->id, srv.registry().tools(), [](const auto& t) { return t.name; });
    const bool dynamic = std::any_of(srv.registry().providers().begin(), srv.registry().providers().end(),
                                     [&](const auto& p) { return p.owner == lib->id; });
    if (dynamic) r.tools = r.tools == "-" ? "(dynamic)" : r.tools + ", (dynamic)";
    r.kinds = joined(lib->id, srv.registry().kinds(), [](const auto& k) { return k.id; });
    r.transports = joined(lib->id, srv.registry().transports(), [](const auto& t) { return t.kind + ":" + t.name; });
    r.status = std::string(plugins::to_string(lib->status));
    if (lib->status != plugins::load_status::loaded) problems.push_back(lib->message);
    rows.push_back(std::move(r));
  }
  row header{"PLUGIN", "VERSION", "ABI", "TOOLS", "PERMISSION KINDS", "TRANSPORTS", "STATUS"};
  std::vector<size_t> width(7, 0);
  auto fields = [](const row& r) { return std::vector<const std::string*>{&r.plugin, &r.version, &r.abi, &r.tools, &r.kinds, &r.transports, &r.status}; };
  for (const row* r : {&header}) {
    auto f = fields(*r);
    for (size_t i = 0; i < 7; ++i) width[i] = std::max(width[i], f[i]->size());
  }
  for (const auto& r : rows) {
    auto f = fields(r);
    for (size_t i = 0; i < 7; ++i) width[i] = std::max(width[i], f[i]->size());
  }
  auto print = [&](const row& r) {
    auto f = fields(r);
    std::string line;
    for (size_t i = 0; i < 7; ++i) {
      line += *f[i];
      if (i + 1 < 7) line += std::string(width[i] - f[i]->size() + 2, ' ');
    }
    out << line << "\n";
  };
  print(header);
  for (const auto& r : rows) print(r);
  if (rows.empty()) out << "(no plugins found in " << absl::StrJoin(cfg->plugin_dirs, ", ") << ")\n";
  if (!problems.empty()) {
    out << "\nProblems:\n";
    for (const auto& p : problems) out << "  " << p << "\n";
  }
  emit(table_fd, out.str());
  srv.shutdown();
  std::_Exit(0);
}

int check_config(const cli::options& o) {
  const int table_fd = transport::take_stdout();
  std::ostringstream out;
  auto cfg = load_config(o);
  if (!cfg) return 2;
  plugins::loader loader(cfg->plugin_dirs);
  int problems = 0;
  size_t plugin_count = 0;
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
    mcp::server srv(*cfg, s, loader);
    srv.load_now();
    for (const auto& inst : srv.instances()) {
      ++plugin_count;
      if (inst->status() != plugins::load_status::loaded) {
        out << s.source << ": server '" << s.name << "': " << inst->message() << "\n";
        ++problems;
      }
    }
    srv.shutdown();
  }
  for (const auto& lib : loader.libraries()) {
    if (lib->status == plugins::load_status::not_shared_library || lib->status == plugins::load_status::missing_symbol ||
        lib->status == plugins::load_status::no_entry_symbol ||
        lib->status == plugins::load_status::wrong_abi || lib->status == plugins::load_status::bad_entry ||
        lib->status == plugins::load_status::duplicate_id) {
      out << lib->message << "\n";
      ++problems;
    }
  }
  const std::string name = cfg->path.empty() ? "built-in defaults" : cfg->path;
  if (problems > 0) {
    out << name << ": " << problems << " problem" << (problems == 1 ? "" : "s") << "\n";
    emit(table_fd, out.str());
    std::_Exit(1);
  }
  out << name << ": OK (" << cfg->servers.size() << " servers, " << plugin_count << " plugin instances started)\n";
  emit(table_fd, out.str());
  std::_Exit(0);
}

}  // namespace toolhost::commands
