#include "host/mcp/server.hpp"

#include <algorithm>
#include <toolhost/sdk/strings.hpp>

#include <absl/strings/str_cat.h>
#include <absl/strings/str_join.h>

#include <toolhost/sdk/json.hpp>
#include <toolhost/sdk/writer.hpp>

#include "host/log.hpp"
#include "host/mcp/jsonrpc.hpp"
#include "host/mcp/session.hpp"
#include "host/plugins/isolation/placement.hpp"
#include "host/policy/privacy.hpp"
#include "host/suggest.hpp"

namespace toolhost::mcp {

server::server(const config::config& cfg, const config::server& settings, plugins::loader& loader)
    : global_(cfg),
      settings_(settings),
      loader_(loader),
      registry_(settings.name),
      home_(policy::home_folder()),
      catalog_(registry_, cfg.page_size) {}

server::~server() {
  if (loader_thread_.joinable()) loader_thread_.join();
}

void server::start_loading() {
  loader_thread_ = std::thread([this] {
    load();
    // Serving: the log is the only place a person sees these (commands print them themselves).
    for (const auto& p : config_problems_) {
      if (p.error) {
        ::toolhost::log::error("config", p.message);
      } else {
        ::toolhost::log::warning("config", p.message);
      }
    }
  });
}

void server::load_now() { load(); }

namespace {

// Failures of one server's start (its settings, its registrations), which another server that
// serves the same plugin need not share.
bool failed_for_one_server(plugins::load_status s) {
  return s == plugins::load_status::bad_settings || s == plugins::load_status::init_failed ||
         s == plugins::load_status::duplicate_name;
}

}  // namespace

void server::load() {
  auto failed = [this](const std::string& id, std::string message) {
    std::lock_guard lock(ready_mutex_);
    failed_.push_back({id, std::move(message)});
  };
  std::set<std::string, std::less<>> started_groups;
  for (const std::string& id : settings_.plugins) {
    const plugins::isolation::placement where = plugins::isolation::place(settings_, id);
    if (where.isolation == config::isolation::process) {
      // Never opened here: its code runs only in its child, so even a constructor that crashes
      // cannot reach the server.
      if (started_groups.insert(where.group).second) start_group(where.group, where.memory_limit_mb);
      continue;
    }
    plugins::library* lib = loader_.find(id);
    if (lib == nullptr) {
      const std::string message =
          cat("server '", name(), "': plugin '", id, "' was not found in ",
              loader_.dirs().empty() ? std::string("any plugin folder") : absl::StrJoin(loader_.dirs(), ", "),
              "; build it, or remove it from plugins = [...] in ", settings_.source);
      ::toolhost::log::warning("server", message);
      failed(id, message);
      continue;
    }
    if (lib->status != plugins::load_status::loaded && !failed_for_one_server(lib->status)) {
      failed(id, lib->message);  // the loader has logged why
      continue;
    }
    auto settings = settings_.settings.find(id);
    config::settings_origin origin;
    if (auto o = settings_.settings_origins.find(id); o != settings_.settings_origins.end()) origin = o->second;
    if (origin.table.empty()) origin.table = settings_.source;
    auto inst = std::make_unique<plugins::instance>(*lib, registry_, *this, name(), global_.dir,
                                                    settings != settings_.settings.end() ? settings->second : "{}",
                                                    settings_.listing, std::move(origin), settings_.checking);
    if (inst->init()) {
      lib->status = plugins::load_status::loaded;  // it may have failed for another server
    } else {
      lib->status = inst->status();
      lib->message = inst->message();
      failed(id, inst->message());
    }
    instances_.push_back(std::move(inst));
  }
  check_transports();
  check_config();
  {
    std::lock_guard lock(ready_mutex_);
    ready_ = true;
  }
  ready_cv_.notify_all();
}

void server::start_group(const std::string& group_name, uint32_t memory_limit_mb) {
  plugins::isolation::start_plan plan;
  plan.server = settings_.name;
  plan.config_dir = global_.dir;
  plan.dirs = loader_.dirs();
  plan.listing = settings_.listing;
  plan.checking = settings_.checking;
  plan.memory_limit_mb = memory_limit_mb;
  for (const std::string& id : settings_.plugins) {
    const auto where = plugins::isolation::place(settings_, id);
    if (where.isolation != config::isolation::process || where.group != group_name) continue;
    plugins::isolation::start_plan::plugin p;
    p.id = id;
    auto settings = settings_.settings.find(id);
    p.settings = settings != settings_.settings.end() ? settings->second : "{}";
    if (auto o = settings_.settings_origins.find(id); o != settings_.settings_origins.end()) p.origin = o->second;
    if (p.origin.table.empty()) p.origin.table = settings_.source;
    plan.plugins.push_back(std::move(p));
  }
  auto g = std::make_unique<plugins::isolation::group>(group_name, plan, *this);
  for (const auto& o : g->start(registry_)) {
    if (o.started) continue;
    const std::string message =
        o.message.empty() ? cat("server '", name(), "': plugin '", o.id, "' did not start") : o.message;
    ::toolhost::log::warning("server", message);
    // What the child found (init failed or crashed there) is the plugin's status here too, as it
    // is for a plugin in process: `toolhost plugins` opens the libraries it lists.
    if (plugins::library* lib = loader_.opened(o.id)) {
      lib->status = plugins::load_status_named(o.status).value_or(plugins::load_status::init_failed);
      lib->message = message;
    }
    std::lock_guard lock(ready_mutex_);
    failed_.push_back({o.id, message});
  }
  groups_.push_back(std::move(g));
}

void server::check_transports() {
  // Each place plugins run: "in process", or an isolated group; with what it registered.
  struct place {
    std::string name;
    std::vector<std::string> plugins;
    std::vector<std::string> transports;
  };
  std::vector<place> places;
  const std::vector<std::string> not_started = plugins_not_started();
  auto started = [&](const std::string& id) {
    return std::find(not_started.begin(), not_started.end(), id) == not_started.end();
  };
  place in_process{"in toolhost's own process", {}, {}};
  for (const auto& inst : instances_) {
    if (inst->active()) in_process.plugins.push_back(inst->lib().id);
  }
  for (const auto& t : registry_.transports())
    in_process.transports.push_back(cat(t.kind, " ", t.name, " of ", t.owner));
  if (!in_process.plugins.empty()) places.push_back(std::move(in_process));
  for (const auto& g : groups_) {
    place p{cat("in the process of group '", g->name(), "'"), {}, {}};
    for (const auto& id : g->plugins()) {
      if (started(id)) p.plugins.push_back(id);
    }
    for (const auto& t : g->transports()) p.transports.push_back(cat(t.kind, " ", t.name, " of ", t.owner));
    if (!p.plugins.empty()) places.push_back(std::move(p));
  }
  if (places.size() < 2) return;
  for (const auto& p : places) {
    if (p.transports.empty()) continue;
    std::vector<std::string> elsewhere;
    for (const auto& q : places) {
      if (&q != &p) elsewhere.push_back(cat(absl::StrJoin(q.plugins, ", "), " (", q.name, ")"));
    }
    transport_error_ = cat(settings_.source, ": server '", name(), "': ", absl::StrJoin(p.plugins, ", "), " ", p.name,
                           " register transports (", absl::StrJoin(p.transports, ", "),
                           "), which plugins in another process cannot ", "reach, but ", absl::StrJoin(elsewhere, "; "),
                           " run apart from them; put them all in one group (group = ", "\"NAME\" in each [servers.",
                           name(), ".plugin_options.ID] table) or give them all isolation = \"none\"");
    return;
  }
}

std::vector<std::string> server::plugins_not_started() const {
  std::vector<std::string> out;
  for (const auto& f : failed_plugins()) out.push_back(f.id);
  return out;
}

void server::check_config() {
  policy::known_kinds known;
  for (const auto& k : registry_.kinds()) known.ids.push_back(k.id);
  known.not_started = plugins_not_started();
  known.scope = cat("server '", name(), "'");
  std::vector<policy::row_problem> problems = policy::unknown_rows(settings_.permissions, known);
  known.rows_may_belong_elsewhere = !serves_alone_;
  for (auto& p : policy::unknown_rows(global_.run_permissions, known)) problems.push_back(std::move(p));
  known.rows_may_belong_elsewhere = true;
  for (auto& p : policy::unknown_rows(global_.permissions, known)) problems.push_back(std::move(p));

  std::vector<std::string> tool_names;
  for (const auto& t : registry_.tools()) tool_names.push_back(t.name);
  for (const auto& [tool, ts] : settings_.tools) {
    if (registry_.find_tool(tool) != nullptr) continue;
    policy::row_problem p;
    p.source = ts.source;
    p.message = cat(ts.source, ": [servers.", name(), ".tools.", tool, "]: no plugin of server '", name(),
                    "' registers a tool named '", tool, "'");
    const std::string guess = closest(tool, tool_names);
    // A provider's tools (a proxy's upstream) are known only when it lists them.
    p.error = !guess.empty() || (registry_.providers().empty() && known.not_started.empty());
    if (!guess.empty()) {
      append(p.message, "; did you mean '", guess, "'?");
    } else if (!p.error) {
      append(p.message, " (it may come from ",
             registry_.providers().empty() ? "a plugin that did not start" : "a provider", ")");
    }
    problems.push_back(std::move(p));
  }
  if (!transport_error_.empty()) problems.push_back({settings_.source, transport_error_, true});
  for (const auto& p : problems) {
    if (p.error && config_error_.empty()) config_error_ = p.message;
  }
  config_problems_ = std::move(problems);
}

bool server::wait_ready(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(ready_mutex_);
  return ready_cv_.wait_for(lock, timeout, [this] { return ready_.load(); });
}

void server::wait_ready() const {
  std::unique_lock lock(ready_mutex_);
  ready_cv_.wait(lock, [this] { return ready_.load(); });
}

void server::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  wait_ready();
  for (auto it = groups_.rbegin(); it != groups_.rend(); ++it) (*it)->stop();
  for (auto it = instances_.rbegin(); it != instances_.rend(); ++it) (*it)->deinit();
}

config::permission server::permission_of(const plugins::permission_kind& kind) const {
  return global_.permission_for(settings_, kind.id).value_or(kind.default_value);
}

void server::wait_for_late_instructions() const {
  // The longest wait any provider whose instructions are still unknown asked for, from now.
  const auto start = std::chrono::steady_clock::now();
  auto deadline = start;
  for (const auto& p : registry_.providers()) {
    if (p.desc.instructions_wait_ms == 0) continue;
    deadline = std::max(deadline, start + std::chrono::milliseconds(p.desc.instructions_wait_ms));
  }
  if (deadline == start) return;
  std::unique_lock lock(instructions_mutex_);
  instructions_known_cv_.wait_until(lock, deadline, [this] {
    for (const auto& p : registry_.providers()) {
      if (p.desc.instructions_wait_ms != 0 && instructions_known_.count(p.owner) == 0) return false;
    }
    return true;
  });
}

std::string server::instructions() const {
  wait_for_late_instructions();
  std::string text = registry_.instructions();
  if (!config_error_.empty()) {
    text = cat("This server's configuration has an error, so its tools are refused until the user fixes it: ",
               config_error_, text.empty() ? "" : "\n\n", text);
  }
  for (const auto& p : registry_.providers()) {
    if (p.desc.instructions == nullptr) continue;
    sdk::string_writer out;
    p.desc.instructions(p.desc.user_data, out.raw());
    if (!out.text().empty()) append(text, text.empty() ? "" : "\n\n", out.text());
  }
  if (const std::string failures = failed_plugins_text(); !failures.empty()) {
    append(text, text.empty() ? "" : "\n\n", failures,
           " Tell the user: those tools stay missing until the problem is fixed and the server is started again.");
  }
  return text;
}

std::vector<server::failed_plugin> server::failed_plugins() const {
  std::lock_guard lock(ready_mutex_);
  return failed_;
}

std::string server::failed_plugins_text() const {
  std::string text;
  for (const auto& f : failed_plugins()) {
    append(text, text.empty() ? "" : " ", "Plugin '", f.id, "' did not start, so its tools are missing: ", f.message,
           ".");
  }
  return text;
}

void server::attach(session* s) {
  std::lock_guard lock(sessions_mutex_);
  sessions_.push_back(s);
}

void server::detach(session* s) {
  std::lock_guard lock(sessions_mutex_);
  sessions_.erase(std::remove(sessions_.begin(), sessions_.end(), s), sessions_.end());
  // A flood of sessions grew the list to thousands; kept at that size, it would pin a page of the
  // heap the flood freed.
  if (sessions_.capacity() > 64 && sessions_.size() < sessions_.capacity() / 4) sessions_.shrink_to_fit();
}

template <class F>
void server::for_each_session(F&& fn) {
  std::vector<std::shared_ptr<session>> live;
  {
    std::lock_guard lock(sessions_mutex_);
    for (session* s : sessions_) {
      if (auto p = s->weak_from_this().lock()) live.push_back(std::move(p));
    }
  }
  for (auto& s : live) fn(*s);
}

void server::list_changed(std::string_view plugin, uint32_t lists) {
  if ((lists & TOOLHOST_LIST_INSTRUCTIONS) != 0) {
    {
      std::lock_guard lock(instructions_mutex_);
      instructions_known_.emplace(plugin);
    }
    instructions_known_cv_.notify_all();
  }
  if ((lists & TOOLHOST_LIST_TOOLS) != 0) catalog_.tools_changed();
  ::toolhost::log::debug("server", cat("plugin '", plugin, "' changed its lists (", lists, ")"));
  const std::pair<uint32_t, const char*> kinds[] = {{TOOLHOST_LIST_TOOLS, "notifications/tools/list_changed"},
                                                    {TOOLHOST_LIST_RESOURCES, "notifications/resources/list_changed"},
                                                    {TOOLHOST_LIST_PROMPTS, "notifications/prompts/list_changed"}};
  for (const auto& [bit, method] : kinds) {
    if ((lists & bit) == 0) continue;
    const std::string message = cat(R"({"jsonrpc":"2.0","method":")", method, "\"}");
    for_each_session([&](session& s) { s.send_notification(message); });
  }
}

void server::resource_updated(std::string_view uri) {
  for_each_session([&](session& s) { s.resource_updated(uri); });
}

void server::log(toolhost_log_level_t level, std::string_view logger, std::string_view data_json) {
  for_each_session([&](session& s) { s.send_log(level, logger, data_json); });
}

}  // namespace toolhost::mcp
