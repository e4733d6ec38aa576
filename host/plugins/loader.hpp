// Finds plugin libraries in the plugin folders and opens them (Boost.DLL), recording for each
// file what happened: loaded, not a shared library, no entry symbol, wrong ABI... Libraries are
// never unloaded: code and data they handed out stay valid for the life of the process.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/dll/shared_library.hpp>

#include <toolhost/plugin.h>

namespace toolhost::plugins {

enum class load_status {
  loaded,              // opened and its entry checked; init runs per server
  untrusted,           // the file or its folder may be changed by another user: never opened
  not_shared_library,  // dlopen refused it
  missing_symbol,      // dlopen found a symbol that nothing loaded defines
  no_entry_symbol,     // a library, but not a toolhost plugin
  wrong_abi,           // built for another ABI major, or a newer minor
  bad_entry,           // the entry is malformed (sizes, id, init missing)
  duplicate_id,        // another file already provides this plugin id
  bad_settings,        // its settings do not fit the schema it declared
  init_failed,         // init returned false or threw
  init_crashed,        // init died on a signal; the host recovered
  duplicate_name,      // init registered a name another plugin of the server already has
};

std::string_view to_string(load_status s);
// The status whose to_string() is `text`; nullopt for any other text.
std::optional<load_status> load_status_named(std::string_view text);

struct library {
  std::string path;
  std::string id;
  std::string version;
  std::string description;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  const toolhost_plugin_entry_t* entry = nullptr;
  // The entry's functions as its struct_size gives them (deinit may be absent).
  bool (*init)(const toolhost_host_t*, void**, toolhost_writer_t*) = nullptr;
  void (*deinit)(void*) = nullptr;
  load_status status = load_status::loaded;
  std::string message;  // for failures: the file, the reason and the remedy, in one sentence
  boost::dll::shared_library handle;
};

class loader {
 public:
  explicit loader(std::vector<std::string> dirs) : dirs_(std::move(dirs)) {}
  loader(const loader&) = delete;
  loader& operator=(const loader&) = delete;

  // Opens every *.so in every folder (folders in order, files sorted by name). [any-thread]
  void load_all();

  // The loaded library with this plugin id, opening <dir>/<id>.so first and scanning the folders
  // only when that file does not exist. nullptr when no folder has it. [any-thread]: servers
  // load their plugins concurrently, and two of them may serve the same plugin.
  library* find(std::string_view id);
  // The library with this plugin id if this loader has opened it already; opens nothing.
  // [any-thread]
  library* opened(std::string_view id);

  const std::vector<std::unique_ptr<library>>& libraries() const { return libraries_; }
  const std::vector<std::string>& dirs() const { return dirs_; }

 private:
  library* open(const std::string& path);
  library* find_loaded(std::string_view id);

  std::vector<std::string> dirs_;
  std::recursive_mutex mutex_;  // guards libraries_ and scanned_; find() opens and scans under it
  std::vector<std::unique_ptr<library>> libraries_;
  bool scanned_ = false;
};

}  // namespace toolhost::plugins
