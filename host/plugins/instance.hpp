// One plugin serving one server: the toolhost_host_t handed to its init, the C service tables
// behind it (registry, log, settings, notify, transports), and its init/deinit lifecycle.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <toolhost/plugin.h>

#include "host/config/config.hpp"
#include "host/plugins/loader.hpp"
#include "host/plugins/registry.hpp"

namespace toolhost::plugins {

// What a plugin may announce after init; the server forwards it to its clients.
class host_events {
 public:
  virtual ~host_events() = default;
  virtual void list_changed(std::string_view plugin, uint32_t lists) = 0;
  virtual void resource_updated(std::string_view uri) = 0;
  virtual void log(toolhost_log_level_t level, std::string_view logger, std::string_view data_json) = 0;
};

class instance {
 public:
  // `listing`: the instance only shows what it registers (TOOLHOST_HOST_LISTING).
  // `origin`: where the settings were written, for the messages of declare_settings.
  // `checking`: it is only checked (TOOLHOST_HOST_CHECKING).
  instance(library& lib, registry& reg, host_events& events, std::string server_name, std::string config_dir,
           std::string settings_json, bool listing = false, config::settings_origin origin = {}, bool checking = false);
  instance(const instance&) = delete;
  instance& operator=(const instance&) = delete;

  // Runs the plugin's init under the crash guard. On failure (init returned false, threw,
  // crashed, or a registration was refused) withdraws what it registered and returns false;
  // status() and message() say why.
  bool init();
  // Runs the plugin's deinit once, if init succeeded.
  void deinit();

  library& lib() const { return lib_; }
  load_status status() const { return status_; }
  const std::string& message() const { return message_; }
  bool active() const { return active_; }

  // The C side of the services; public for the table functions in instance.cpp.
  static instance& of(const toolhost_host_t* host) { return *static_cast<instance*>(host->host_data); }
  bool initializing() const { return initializing_; }
  registry& reg() const { return registry_; }
  host_events& events() const { return events_; }
  const std::string& server_name() const { return server_name_; }
  const std::string& config_dir() const { return config_dir_; }
  const std::string& settings_json() const { return settings_json_; }
  const config::settings_origin& settings_origin() const { return settings_origin_; }
  bool listing() const { return (host_.flags & TOOLHOST_HOST_LISTING) != 0; }
  // declare_settings may run once per instance.
  bool settings_declared() const { return settings_declared_; }
  void mark_settings_declared() { settings_declared_ = true; }
  // Remembers the first refused registration: it fails the whole init.
  void refuse(load_status why, std::string message);

 private:
  library& lib_;
  registry& registry_;
  host_events& events_;
  std::string server_name_;
  std::string config_dir_;
  std::string settings_json_;
  config::settings_origin settings_origin_;
  bool settings_declared_ = false;
  toolhost_host_t host_{};
  void* plugin_instance_ = nullptr;
  bool initializing_ = false;
  bool active_ = false;
  load_status status_ = load_status::loaded;
  std::string message_;
  bool refused_ = false;
  load_status refused_status_ = load_status::init_failed;
  std::string refused_message_;
};

}  // namespace toolhost::plugins
