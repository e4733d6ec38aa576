#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <thread>

#include <toolhost/sdk/strings.hpp>

#include "host/commands/commands.hpp"
#include "host/commands/setup.hpp"
#include "host/log.hpp"
#include "host/mcp/fault_log.hpp"
#include "host/mcp/server.hpp"
#include "host/plugins/loader.hpp"
#include "host/policy/file_trust.hpp"
#include "host/transport/http_server.hpp"
#include "host/transport/stdio.hpp"

namespace toolhost::commands {
namespace {

std::atomic<bool> g_stop{false};

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

// Exits when the parent process dies (MCP clients that crash leave no orphan behind). Not
// PR_SET_PDEATHSIG alone: that fires when the parent *thread* that started us ends, so under a
// parent whose threads come and go (a toolhost whose rea-filter started this one from a worker
// that later retired) it stopped a healthy server at once. A pidfd reports the process's end.
void watch_parent() {
  const pid_t parent = getppid();
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, parent, 0));
  if (fd < 0) {
    const int error = errno;
    if (error == ENOSYS) ::prctl(PR_SET_PDEATHSIG, SIGTERM);  // a kernel before 5.3
    if (error == ESRCH || getppid() != parent) g_stop = true;
    return;
  }
  if (getppid() != parent) g_stop = true;  // it died before the pidfd was taken
  std::thread([fd] {
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    ::close(fd);
    ::toolhost::log::info("main", "the parent process ended; finishing");
    g_stop = true;
  }).detach();
}

// The bearer token: --token, --token-file, TOOLHOST_TOKEN, then the config's [http] token.
std::optional<std::string> http_token(const cli::options& o, const config::config& cfg) {
  if (o.token) return *o.token;
  if (!o.token_file.empty()) {
    if (absl::Status s = policy::check_private(o.token_file, "token file"); !s.ok()) {
      fail(view(s.message()));
      return std::nullopt;
    }
    std::ifstream in(o.token_file);
    std::string token;
    if (!in || !std::getline(in, token)) {
      fail(cat("--token-file ", o.token_file, ": cannot read a token from it (the token is its first line)"));
      return std::nullopt;
    }
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t')) token.pop_back();
    if (token.empty()) {
      fail(cat("--token-file ", o.token_file, ": its first line is empty; write the token there"));
      return std::nullopt;
    }
    return token;
  }
  if (const char* env = std::getenv("TOOLHOST_TOKEN"); env != nullptr && *env != '\0') return std::string(env);
  return cfg.http.token;
}

// `--http`: the named server at /mcp, or every enabled server at /NAME/mcp.
int serve_http(const cli::options& o, const config::config& cfg) {
  auto bind = transport::http::parse_bind(o.http, o.unsafe_http);
  if (!bind.ok()) {
    fail(view(bind.status().message()));
    return 2;
  }
  transport::http::options opts;
  opts.bind = *bind;
  auto token = http_token(o, cfg);
  if (!token) return 2;
  opts.token = *token;
  opts.allowed_origins = cfg.http.allowed_origins;
  opts.max_body_bytes = cfg.http.max_body_bytes;

  std::vector<std::pair<std::string, const config::server*>> chosen;  // path, server
  if (!o.server.empty()) {
    const config::server* s = choose_server(cfg, o.server);
    if (s == nullptr) return 2;
    chosen.emplace_back("/mcp", s);
  } else {
    for (const auto& s : cfg.servers) {
      if (s.enabled) chosen.emplace_back(cat("/", s.name, "/mcp"), &s);
    }
    if (chosen.empty()) {
      fail(cat("no enabled server in ", cfg.files(), "; enable one or pass --server NAME"));
      return 2;
    }
  }
  plugins::loader loader(cfg.plugin_dirs);
  std::vector<std::unique_ptr<mcp::server>> servers;
  std::vector<transport::http::endpoint> endpoints;
  for (const auto& [path, settings] : chosen) {
    servers.push_back(std::make_unique<mcp::server>(cfg, *settings, loader));
    servers.back()->set_serves_alone(chosen.size() == 1);
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
    fail("cannot duplicate stdout for the protocol");
    return 1;
  }
  watch_signals();
  mcp::fault_log::install();
  if (o.http.empty()) watch_parent();  // an HTTP server may outlive the shell that started it
  auto cfg = load_config(o);
  if (!cfg) return 2;
  if (!o.http.empty()) return serve_http(o, *cfg);

  const config::server* settings = choose_server(*cfg, o.server);
  if (settings == nullptr) return 2;
  plugins::loader loader(cfg->plugin_dirs);
  mcp::server srv(*cfg, *settings, loader);
  srv.set_serves_alone(true);
  srv.start_loading();
  log::info("main", cat("serving '", settings->name, "' on stdio"));
  const int code = transport::serve_stdio(srv, protocol_fd, [] { return g_stop.load(); });
  // Plugins are shut down only when no call still runs in them; otherwise leave without it.
  if (srv.workers().wait_idle(2000)) srv.shutdown();
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace toolhost::commands
