#include "host/plugins/loader.hpp"

#include <cxxabi.h>
#include <toolhost/sdk/strings.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <mutex>

#include <absl/strings/str_cat.h>

#include "host/log.hpp"
#include "host/plugins/abi_struct.hpp"
#include "host/policy/file_trust.hpp"

namespace toolhost::plugins {
namespace {

namespace fs = std::filesystem;

// dlopen and dlclose are not safe to run concurrently on every platform: one lock for all.
std::mutex g_dl_mutex;

bool valid_plugin_id(std::string_view s) {
  if (s.empty() || s.size() > 64) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
           c == '.';
  });
}

// The symbol a dlopen error says is undefined, demangled where it is C++, with its mangled name
// (what nm shows) after it; empty when the error is about something else.
std::string undefined_symbol(std::string_view dl_error) {
  constexpr std::string_view kMarker = "undefined symbol: ";
  const size_t at = dl_error.find(kMarker);
  if (at == std::string_view::npos) return {};
  std::string_view name = dl_error.substr(at + kMarker.size());
  name = name.substr(0, name.find_first_of(" ,)\n"));
  if (name.empty()) return {};
  const std::string mangled(name);
  int status = -1;
  std::unique_ptr<char, void (*)(void*)> readable(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                  std::free);
  if (status != 0 || readable == nullptr) return cat("the symbol ", mangled);
  return cat("the symbol ", readable.get(), " (", mangled, ")");
}

void check_entry(library& lib) {
  const toolhost_plugin_entry_t* e = lib.entry;
  lib.abi_major = e->abi_major;
  lib.abi_minor = e->abi_minor;
  if (e->abi_major != TOOLHOST_ABI_MAJOR) {
    lib.status = load_status::wrong_abi;
    lib.message = cat(lib.path, " was built for toolhost plugin ABI ", e->abi_major, ".", e->abi_minor,
                      " but this toolhost speaks ABI ", TOOLHOST_ABI_MAJOR, ".", TOOLHOST_ABI_MINOR,
                      "; rebuild the plugin against this toolhost's SDK");
    return;
  }
  if (e->abi_minor > TOOLHOST_ABI_MINOR) {
    lib.status = load_status::wrong_abi;
    lib.message = cat(lib.path, " needs toolhost plugin ABI ", e->abi_major, ".", e->abi_minor,
                      " but this toolhost provides ", TOOLHOST_ABI_MAJOR, ".", TOOLHOST_ABI_MINOR,
                      "; update toolhost or rebuild the plugin against the older SDK");
    return;
  }
  // The entry is read by the growth rule: what its struct_size does not cover is absent (deinit
  // may be), what lies past the host's layout must be zero.
  auto read = read_struct(e, "toolhost_plugin_entry_t");
  std::string problem;
  constexpr size_t kMinSize = offsetof(toolhost_plugin_entry_t, init) + sizeof(e->init);
  if (!read.ok() && e->struct_size > sizeof(toolhost_plugin_entry_t) && e->struct_size <= kMaxStructSize) {
    lib.status = load_status::wrong_abi;  // it uses an entry field of a newer ABI
    lib.message = cat(lib.path, ": ", view(read.status().message()));
    return;
  }
  if (!read.ok()) {
    problem = std::string(view(read.status().message()));
  } else if (e->struct_size < kMinSize) {
    problem = cat("struct_size ", e->struct_size, " is too small to hold init, which needs ", kMinSize);
  } else if (read->id == nullptr) {
    problem = "no id";
  } else if (!valid_plugin_id(read->id)) {
    problem = cat("id '", read->id, "' is not 1 to 64 letters, digits, '_', '-' or '.'");
  } else if (read->init == nullptr) {
    problem = "no init function";
  }
  if (!problem.empty()) {
    lib.status = load_status::bad_entry;
    lib.message = cat(lib.path, " has a malformed toolhost_plugin_entry (", problem,
                      "); rebuild it with TOOLHOST_PLUGIN(...) or fix the entry as plugin.h describes");
    return;
  }
  lib.id = read->id;
  lib.version = read->version != nullptr ? read->version : "";
  lib.description = read->description != nullptr ? read->description : "";
  lib.deinit = read->deinit;
  lib.init = read->init;
}

}  // namespace

std::string_view to_string(load_status s) {
  switch (s) {
    case load_status::loaded: return "loaded";
    case load_status::untrusted: return "not trusted";
    case load_status::not_shared_library: return "not a shared library";
    case load_status::missing_symbol: return "missing symbol";
    case load_status::no_entry_symbol: return "no entry symbol";
    case load_status::wrong_abi: return "wrong ABI";
    case load_status::bad_entry: return "bad entry";
    case load_status::duplicate_id: return "duplicate plugin id";
    case load_status::bad_settings: return "bad settings";
    case load_status::init_failed: return "init failed";
    case load_status::init_crashed: return "init crashed";
    case load_status::duplicate_name: return "duplicate name";
  }
  return "unknown";
}

std::optional<load_status> load_status_named(std::string_view text) {
  for (int i = 0; i <= static_cast<int>(load_status::duplicate_name); ++i) {
    if (to_string(static_cast<load_status>(i)) == text) return static_cast<load_status>(i);
  }
  return std::nullopt;
}

library* loader::open(const std::string& path) {
  for (auto& l : libraries_) {
    if (l->path == path) return l.get();
  }
  auto lib = std::make_unique<library>();
  lib->path = path;
  // Checked before dlopen, which runs the library's constructors.
  absl::Status trusted = policy::check_trusted(fs::path(path).parent_path().string(), "plugin folder");
  if (trusted.ok()) trusted = policy::check_trusted(path, "plugin");
  if (!trusted.ok()) {
    lib->status = load_status::untrusted;
    lib->message = std::string(trusted.message());
  }
  if (lib->status == load_status::loaded) {
    std::lock_guard lock(g_dl_mutex);
    try {
      // RTLD_NOW: an unresolved symbol fails here, with a message, not later in a call.
      lib->handle.load(path, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
    } catch (const std::exception& e) {
      if (const std::string symbol = undefined_symbol(e.what()); !symbol.empty()) {
        lib->status = load_status::missing_symbol;
        lib->message = cat(path, " needs ", symbol,
                           ", which neither toolhost nor the libraries the plugin links provide; link the library that "
                           "defines it into the plugin, or rebuild the plugin against this toolhost's SDK");
      } else {
        lib->status = load_status::not_shared_library;
        lib->message = cat(path, " could not be loaded as a shared library (", e.what(),
                           "); remove it from the plugin folder or rebuild it for this machine");
      }
    }
  }
  if (lib->status == load_status::loaded) {
    if (!lib->handle.has(TOOLHOST_ENTRY_SYMBOL)) {
      lib->status = load_status::no_entry_symbol;
      lib->message = cat(path, " exports no ", TOOLHOST_ENTRY_SYMBOL,
                         " symbol, so it is not a toolhost plugin; remove it from the plugin folder, "
                         "or declare the plugin with TOOLHOST_PLUGIN(...)");
    } else {
      lib->entry = &lib->handle.get<const toolhost_plugin_entry_t>(TOOLHOST_ENTRY_SYMBOL);
      check_entry(*lib);
    }
  }
  if (lib->status == load_status::loaded) {
    if (library* other = find_loaded(lib->id)) {
      lib->status = load_status::duplicate_id;
      lib->message = cat(path, " provides plugin '", lib->id, "', which ", other->path,
                         " already provides; remove one of the two files");
    }
  }
  if (lib->status != load_status::loaded) log::warning("plugins", lib->message);
  libraries_.push_back(std::move(lib));
  return libraries_.back().get();
}

library* loader::find_loaded(std::string_view id) {
  for (auto& l : libraries_) {
    if (l->status != load_status::duplicate_id && !l->id.empty() && l->id == id && l->entry != nullptr) return l.get();
  }
  return nullptr;
}

void loader::load_all() {
  std::lock_guard lock(mutex_);
  if (scanned_) return;
  scanned_ = true;
  for (const auto& dir : dirs_) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
      log::warning("plugins", cat("plugin folder ", dir, " does not exist; skipping it"));
      continue;
    }
    std::vector<std::string> files;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().extension() == ".so" && entry.is_regular_file(ec)) files.push_back(entry.path().string());
    }
    std::sort(files.begin(), files.end());
    for (const auto& f : files) open(f);
  }
}

library* loader::opened(std::string_view id) {
  std::lock_guard lock(mutex_);
  return find_loaded(id);
}

library* loader::find(std::string_view id) {
  std::lock_guard lock(mutex_);
  if (library* l = find_loaded(id)) return l;
  for (const auto& dir : dirs_) {
    fs::path p = fs::path(dir) / cat(id, ".so");
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) {
      library* l = open(p.string());
      // <id>.so is that plugin, even when it could not be opened: its status says why.
      if (l->id == id || (l->id.empty() && l->status != load_status::loaded)) return l;
    }
  }
  load_all();
  return find_loaded(id);
}

}  // namespace toolhost::plugins
