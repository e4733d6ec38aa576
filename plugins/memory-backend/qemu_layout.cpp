#include "qemu_layout.hpp"

#include <dirent.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <sstream>

#include <absl/strings/str_format.h>
#include <absl/strings/str_join.h>

namespace toolhost::memory_backend {

absl::StatusOr<ram_layout> parse_flat_memory(const std::string& mtree) {
  std::istringstream in(mtree);
  std::string line;
  bool in_memory_view = false;
  bool in_flatview = false;
  const std::regex region_re(
      R"(^\s*([0-9a-f]+)-([0-9a-f]+) \(prio -?\d+, (ram|ramd|rom|romd)\): (\S+)(?: @([0-9a-f]+))?)");
  struct raw {
    uint64_t start, end, offset;
    std::string block;
  };
  std::vector<raw> regions;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.rfind("FlatView #", 0) == 0) {
      if (in_memory_view) break;  // the memory view ended
      in_flatview = true;
      continue;
    }
    if (in_flatview && line.find(" AS \"memory\"") != std::string::npos) {
      in_memory_view = true;
      continue;
    }
    if (!in_memory_view || !std::regex_search(line, m, region_re)) continue;
    const uint64_t start = std::stoull(m[1], nullptr, 16);
    const uint64_t last = std::stoull(m[2], nullptr, 16);
    const uint64_t offset = m[5].matched ? std::stoull(m[5], nullptr, 16) : 0;
    regions.push_back({start, last + 1, offset, m[4]});
  }
  if (!in_memory_view)
    return absl::InvalidArgumentError("`info mtree -f` shows no flat view of address space \"memory\"");
  auto zero = std::find_if(regions.begin(), regions.end(), [](const raw& r) { return r.start == 0; });
  if (zero == regions.end()) return absl::NotFoundError("no RAM at guest-physical address 0 in `info mtree -f`");
  ram_layout layout;
  layout.block = zero->block;
  for (const raw& r : regions) {
    if (r.block != layout.block) continue;
    layout.regions.push_back({r.start, r.end, r.offset});
    layout.block_size = std::max(layout.block_size, r.offset + (r.end - r.start));
  }
  std::sort(layout.regions.begin(), layout.regions.end(),
            [](const ram_region& a, const ram_region& b) { return a.gpa_start < b.gpa_start; });
  return layout;
}

std::vector<host_mapping> parse_maps(const std::string& text) {
  std::vector<host_mapping> maps;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string range, perms, offset, dev, inode, path;
    if (!(l >> range >> perms >> offset >> dev >> inode)) continue;
    std::getline(l, path);
    path.erase(0, path.find_first_not_of(' '));
    const size_t dash = range.find('-');
    if (dash == std::string::npos || perms.size() < 2) continue;
    host_mapping h;
    h.start = std::stoull(range.substr(0, dash), nullptr, 16);
    h.end = std::stoull(range.substr(dash + 1), nullptr, 16);
    h.readable = perms[0] == 'r';
    h.writable = perms[1] == 'w';
    h.path = path;
    maps.push_back(h);
  }
  return maps;
}

absl::StatusOr<host_mapping> find_ram_mapping(const std::vector<host_mapping>& maps, uint64_t size) {
  auto ram_like = [](const host_mapping& h) {
    return h.readable && h.writable &&
           (h.path.empty() || h.path.rfind("/dev/shm/", 0) == 0 || h.path.rfind("/memfd:", 0) == 0);
  };
  for (const host_mapping& h : maps) {
    if (ram_like(h) && h.end - h.start == size) return h;
  }
  const host_mapping* best = nullptr;
  for (const host_mapping& h : maps) {
    if (h.readable && h.writable && h.end - h.start >= size &&
        (best == nullptr || h.end - h.start > best->end - best->start))
      best = &h;
  }
  if (best == nullptr) {
    return absl::NotFoundError(
        absl::StrFormat("no read-write mapping of 0x%x bytes (the guest's RAM) in the QEMU process", size));
  }
  return *best;
}

absl::StatusOr<int> find_qemu_pid() {
  std::vector<int> found;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return absl::InternalError("cannot list /proc");
  while (dirent* e = ::readdir(proc)) {
    const std::string name = e->d_name;
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream comm("/proc/" + name + "/comm");
    std::string c;
    if (std::getline(comm, c) && c.rfind("qemu-system-", 0) == 0) found.push_back(std::stoi(name));
  }
  ::closedir(proc);
  if (found.empty())
    return absl::NotFoundError("no running qemu-system-* process was found; give its pid as connect=\"pid=N\"");
  if (found.size() > 1) {
    std::sort(found.begin(), found.end());
    return absl::FailedPreconditionError(
        absl::StrFormat("%u QEMU processes are running (pids %s); say which one with connect=\"pid=N\"", found.size(),
                        absl::StrJoin(found, ", ")));
  }
  return found.front();
}

std::string qmp_socket_from_cmdline(const std::vector<std::string>& argv) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] != "-qmp" && argv[i] != "--qmp") continue;
    const std::string& v = argv[i + 1];
    if (v.rfind("unix:", 0) != 0) continue;
    return v.substr(5, v.find(',') == std::string::npos ? std::string::npos : v.find(',') - 5);
  }
  return "";
}

uint64_t ram_size_from_cmdline(const std::vector<std::string>& argv) {
  for (size_t i = 0; i + 1 < argv.size(); ++i) {
    if (argv[i] != "-m" && argv[i] != "--m") continue;
    std::string v = argv[i + 1];
    if (const size_t at = v.find("size="); at != std::string::npos) v = v.substr(at + 5);
    v = v.substr(0, v.find(','));
    if (v.empty()) return 0;
    uint64_t scale = 1ull << 20;  // QEMU's default suffix is M
    const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(v.back())));
    if (suffix == 'K') scale = 1ull << 10;
    if (suffix == 'M') scale = 1ull << 20;
    if (suffix == 'G') scale = 1ull << 30;
    if (suffix == 'T') scale = 1ull << 40;
    if (std::isalpha(static_cast<unsigned char>(v.back()))) v.pop_back();
    try {
      return static_cast<uint64_t>(std::stod(v) * static_cast<double>(scale));
    } catch (...) {
      return 0;
    }
  }
  return 0;
}

}  // namespace toolhost::memory_backend
