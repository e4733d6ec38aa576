#include "toolhost/symbols/symbol_locator.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>

#include <absl/strings/ascii.h>
#include <absl/strings/match.h>
#include <absl/strings/str_cat.h>
#include <unistd.h>

#include "cab.hpp"
#include "toolhost/symbols/http_fetch.hpp"

namespace toolhost::symbols {

namespace fs = std::filesystem;

namespace {

// A server that could not be reached is not asked again for a while: a kernel has a hundred
// modules, and a hundred timeouts would stall every command.
constexpr auto kRetryAfter = std::chrono::seconds(60);

std::mutex g_failures_mutex;
std::map<std::string, std::chrono::steady_clock::time_point> g_failures;

bool recently_failed(const std::string& server) {
  std::lock_guard lock(g_failures_mutex);
  auto it = g_failures.find(server);
  return it != g_failures.end() && std::chrono::steady_clock::now() - it->second < kRetryAfter;
}

void note_failure(const std::string& server) {
  std::lock_guard lock(g_failures_mutex);
  g_failures[server] = std::chrono::steady_clock::now();
}

// "wsfix.pdb" -> "wsfix.pd_"
std::string compressed_name(const std::string& name) {
  return name.empty() ? name : name.substr(0, name.size() - 1) + "_";
}

bool exists_file(const std::string& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

std::string temp_beside(const std::string& target) {
  static std::atomic<uint64_t> sequence{0};
  return target + ".partial-" + std::to_string(getpid()) + "-" + std::to_string(sequence++);
}

// A store root becomes recognisable to SymSrv (and so to WinDbg, IDA, Ghidra) by these.
void mark_store(const std::string& store) {
  std::error_code ec;
  fs::create_directories(fs::path(store) / "000admin", ec);
  const fs::path ping = fs::path(store) / "pingme.txt";
  if (!fs::exists(ping, ec)) std::ofstream(ping) << "toolhost symbol cache\n";
}

// Copies `from` into the store as name/KEY/name (through a temporary file and a rename).
absl::StatusOr<std::string> put_in_store(const std::string& store, const std::string& name, const std::string& key,
                                         const std::string& from) {
  const std::string target = store_file(store, name, key);
  std::error_code ec;
  fs::create_directories(fs::path(target).parent_path(), ec);
  if (ec)
    return absl::PermissionDeniedError("cannot create " + fs::path(target).parent_path().string() + ": " +
                                       ec.message());
  mark_store(store);
  const std::string temp = temp_beside(target);
  fs::copy_file(from, temp, fs::copy_options::overwrite_existing, ec);
  if (ec) return absl::PermissionDeniedError("cannot write " + temp + ": " + ec.message());
  fs::rename(temp, target, ec);
  if (ec) {
    fs::remove(temp, ec);
    return absl::PermissionDeniedError("cannot write " + target + ": " + ec.message());
  }
  return target;
}

struct search {
  const file_request& request;
  locate_result result;

  bool accept(const std::string& candidate, const std::string& origin, bool downloaded) {
    if (request.verify) {
      if (absl::Status s = request.verify(candidate); !s.ok()) {
        result.notes.push_back(std::string(s.message()));
        return false;
      }
    }
    result.found = located{candidate, origin, downloaded};
    return true;
  }

  // A local store folder: the file, its compressed form, or a file.ptr.
  bool in_store(const std::string& store, const std::vector<std::string>& caches) {
    const std::string plain = store_file(store, request.name, request.key);
    if (exists_file(plain) && accept(plain, store, false)) return true;
    const std::string dir = fs::path(plain).parent_path().string();
    const std::string packed = dir + "/" + compressed_name(request.name);
    if (exists_file(packed)) {
      const std::string expanded = temp_beside(plain);
      if (absl::Status s = expand_cabinet(packed, expanded); !s.ok()) {
        result.notes.push_back(std::string(s.message()));
      } else if (keep(expanded, store, caches.empty() ? std::vector<std::string>{store} : caches, false)) {
        return true;
      }
    }
    const std::string ptr = dir + "/file.ptr";
    if (exists_file(ptr)) {
      std::ifstream in(ptr);
      std::string line;
      std::getline(in, line);
      line = std::string(absl::StripAsciiWhitespace(line));
      if (absl::StartsWith(line, "PATH:")) {
        std::string target = line.substr(5);
        if (!fs::path(target).is_absolute()) target = (fs::path(store) / target).string();
        if (exists_file(target) && accept(target, store, false)) return true;
        result.notes.push_back(ptr + " points at " + target + ", which is not there");
      } else if (absl::StartsWith(line, "MSG:")) {
        result.notes.push_back(store + ": " + line.substr(4));
      }
    }
    return false;
  }

  // A plain folder: as a store, then flat (folder/name, folder/ext/name, folder/symbols/ext/name).
  bool in_folder(const std::string& folder) {
    if (in_store(folder, {})) return true;
    const std::string ext = fs::path(request.name)
                                .extension()
                                .string()
                                .substr(std::min<size_t>(1, fs::path(request.name).extension().string().size()));
    for (const std::string& p : {folder + "/" + request.name, folder + "/" + ext + "/" + request.name,
                                 folder + "/symbols/" + ext + "/" + request.name}) {
      if (exists_file(p) && accept(p, folder, false)) return true;
    }
    return false;
  }

  // A file fetched or expanded into `temp`: checked, then placed in each cache.
  bool keep(const std::string& temp, const std::string& origin, const std::vector<std::string>& caches,
            bool downloaded) {
    std::error_code ec;
    if (request.verify) {
      if (absl::Status s = request.verify(temp); !s.ok()) {
        result.notes.push_back(absl::StrCat(origin, ": ", s.message()));
        fs::remove(temp, ec);
        return false;
      }
    }
    std::string final_path = temp;
    for (const auto& cache : caches) {
      auto placed = put_in_store(cache, request.name, request.key, temp);
      if (!placed.ok()) {
        result.notes.push_back(std::string(placed.status().message()));
        continue;
      }
      if (final_path == temp) final_path = *placed;
    }
    if (final_path == temp) {
      // No cache could take it: keep it beside the temporary name.
      const std::string kept = temp + "." + request.name;
      fs::rename(temp, kept, ec);
      final_path = ec ? temp : kept;
    } else {
      fs::remove(temp, ec);
    }
    result.found = located{final_path, origin, downloaded};
    return true;
  }

  bool from_server(const std::string& server, const std::vector<std::string>& caches) {
    if (recently_failed(server)) {
      result.notes.push_back(server + " was not tried: it could not be reached less than a minute ago");
      result.network_failed = true;
      return false;
    }
    std::string base = server;
    while (!base.empty() && base.back() == '/') base.pop_back();
    const std::string dir = base + "/" + request.name + "/" + request.key + "/";
    const std::string scratch_dir = caches.empty() ? fs::temp_directory_path().string() : caches.front();
    std::error_code ec;
    fs::create_directories(scratch_dir, ec);
    const std::string temp = temp_beside((fs::path(scratch_dir) / request.name).string());
    http_options o;
    o.timeout = request.timeout;
    o.cancelled = request.cancelled;
    for (const std::string& file : {request.name, compressed_name(request.name)}) {
      const std::string url = dir + file;
      o.progress = [&](uint64_t done, uint64_t total) {
        if (request.progress) request.progress(done, total, url);
      };
      auto r = http_get_file(url, temp, o);
      if (!r.ok()) {
        fs::remove(temp, ec);
        result.notes.push_back(std::string(r.status().message()));
        if (!absl::IsCancelled(r.status())) {
          note_failure(server);
          result.network_failed = true;
        }
        return false;
      }
      if (r->status == 200) {
        if (file == request.name) return keep(temp, url, caches, true);
        const std::string expanded = temp + ".expanded";
        absl::Status s = expand_cabinet(temp, expanded);
        fs::remove(temp, ec);
        if (!s.ok()) {
          result.notes.push_back(std::string(s.message()));
          return false;
        }
        return keep(expanded, url, caches, true);
      }
      if (r->status != 404) {
        fs::remove(temp, ec);
        result.notes.push_back(absl::StrCat(url, " answered ", r->status));
        return false;
      }
    }
    fs::remove(temp, ec);
    // Neither form: a file.ptr may say where the file is.
    auto ptr = http_get_text(dir + "file.ptr", o, 4096);
    if (!ptr.ok() || ptr->first.status != 200) {
      result.notes.push_back(absl::StrCat(dir, request.name, " is not on ", server, " (404)"));
      return false;
    }
    const std::string line(absl::StripAsciiWhitespace(ptr->second.substr(0, ptr->second.find('\n'))));
    if (absl::StartsWith(line, "MSG:")) {
      result.notes.push_back(server + ": " + line.substr(4));
      return false;
    }
    if (!absl::StartsWith(line, "PATH:")) {
      result.notes.push_back(dir + "file.ptr says neither PATH: nor MSG:");
      return false;
    }
    // A server's file.ptr may point at another URL or at a path below the server; never at a
    // file of this machine.
    std::string target = line.substr(5);
    if (target.find("://") == std::string::npos) {
      if (target.empty() || target[0] == '/' || target[0] == '\\' || target.find("..") != std::string::npos ||
          (target.size() > 1 && target[1] == ':')) {
        result.notes.push_back(dir + "file.ptr points outside the server (" + target + "); not followed");
        return false;
      }
      for (char& c : target) {
        if (c == '\\') c = '/';
      }
      target = base + "/" + target;
    }
    o.progress = [&](uint64_t done, uint64_t total) {
      if (request.progress) request.progress(done, total, target);
    };
    auto r = http_get_file(target, temp, o);
    if (!r.ok() || r->status != 200) {
      fs::remove(temp, ec);
      result.notes.push_back(r.ok() ? absl::StrCat(target, " (from file.ptr) answered ", r->status)
                                    : std::string(r.status().message()));
      return false;
    }
    return keep(temp, target, caches, true);
  }
};

}  // namespace

std::string store_file(const std::string& store, const std::string& name, const std::string& key) {
  std::error_code ec;
  if (fs::exists(fs::path(store) / "index2.txt", ec)) {
    // Two-tier: the first two characters of the name, lower-cased, above the usual layout.
    const std::string tier = absl::AsciiStrToLower(name.substr(0, std::min<size_t>(2, name.size())));
    return (fs::path(store) / tier / name / key / name).string();
  }
  return (fs::path(store) / name / key / name).string();
}

void forget_server_failures() {
  std::lock_guard lock(g_failures_mutex);
  g_failures.clear();
}

locate_result locate(const symbol_path& path, const file_request& request) {
  search s{request, {}};
  if (request.name.empty() || request.name.find('/') != std::string::npos ||
      request.name.find("..") != std::string::npos) {
    s.result.notes.push_back("'" + request.name + "' is not a file name a symbol store holds");
    return std::move(s.result);
  }
  for (const auto& e : path.elements()) {
    if (request.cancelled && request.cancelled()) break;
    if (e.cache_marker) continue;
    bool found = false;
    if (e.plain_folder) {
      found = s.in_folder(e.stores.front());
    } else {
      for (const auto& store : e.stores) {
        if ((found = s.in_store(store, e.caches))) break;
      }
    }
    if (!found && !e.server.empty()) found = s.from_server(e.server, e.caches);
    if (found) return std::move(s.result);
  }
  return std::move(s.result);
}

}  // namespace toolhost::symbols
