#include "memory_target.hpp"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include <absl/strings/numbers.h>
#include <absl/strings/str_format.h>
#include <absl/strings/str_split.h>
#include <rapidjson/document.h>
#include <toolhost/paging/page_walk.hpp>

#include "qemu_layout.hpp"
#include "qmp_client.hpp"

namespace toolhost::memory_backend {
namespace {

namespace snap = snapshots;

constexpr uint64_t kLowRamLimit = 0x80000000;  // every x86 machine type keeps RAM below 2 GiB contiguous

absl::StatusOr<uint64_t> parse_number(const std::string& key, const std::string& text) {
  uint64_t v = 0;
  const bool hex = text.rfind("0x", 0) == 0 || text.rfind("0X", 0) == 0;
  if (hex ? absl::SimpleHexAtoi(text.substr(2), &v) : absl::SimpleAtoi(text, &v)) return v;
  return absl::InvalidArgumentError(absl::StrFormat("%s=\"%s\" is not a number", key, text));
}

absl::Status apply(memory_options& o, const std::string& key, const std::string& value) {
  if (key == "pid") {
    absl::StatusOr<uint64_t> v = parse_number("pid", value);
    if (!v.ok()) return v.status();
    o.pid = static_cast<int>(*v);
  } else if (key == "qmp") {
    o.qmp = value;
  } else if (key == "cr3") {
    absl::StatusOr<uint64_t> v = parse_number("cr3", value);
    if (!v.ok()) return v.status();
    o.cr3 = *v;
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("unknown memory backend option \"%s\" (known: pid, qmp, cr3)", key));
  }
  return absl::OkStatus();
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class memory_snapshot final : public snap::snapshot {
 public:
  memory_snapshot(int pid, ram_layout layout, uint64_t host_base, uint64_t cr3, std::string source)
      : pid_(pid), layout_(std::move(layout)), host_base_(host_base), cr3_(cr3), source_(std::move(source)) {}

  const char* os() const override { return ""; }
  const char* kind() const override { return "system"; }
  bool has_physical() const override { return true; }
  bool has_virtual() const override { return cr3_ != 0; }
  bool is_live() const override { return true; }

  absl::StatusOr<size_t> read_physical(uint64_t address, std::span<uint8_t> out) override {
    return transfer(address, out.data(), out.size(), false);
  }

  absl::Status write_physical(uint64_t address, std::span<const uint8_t> data) override {
    absl::StatusOr<size_t> n = transfer(address, const_cast<uint8_t*>(data.data()), data.size(), true);
    if (!n.ok()) return n.status();
    if (*n != data.size()) return absl::NotFoundError(absl::StrFormat("physical 0x%x is not guest RAM", address + *n));
    return absl::OkStatus();
  }

  absl::StatusOr<size_t> read_virtual(uint64_t address, std::span<uint8_t> out, int64_t) override {
    return paging::read_virtual(cr3_, address, out, [this](uint64_t pa, std::span<uint8_t> buf) -> absl::Status {
      absl::StatusOr<size_t> n = read_physical(pa, buf);
      if (!n.ok()) return n.status();
      if (*n != buf.size()) return absl::NotFoundError(absl::StrFormat("physical 0x%x is not guest RAM", pa + *n));
      return absl::OkStatus();
    });
  }

  toolhost_dt_stop_t initial_stop() const override {
    toolhost_dt_stop_t s{};
    s.struct_size = sizeof s;
    s.thread = -1;
    return s;
  }

  std::string hints_json() const override {
    std::string regions;
    for (const ram_region& r : layout_.regions) {
      regions += absl::StrFormat("%s{\"start\":\"0x%x\",\"end\":\"0x%x\"}", regions.empty() ? "" : ",", r.gpa_start,
                                 r.gpa_end);
    }
    std::string h = absl::StrFormat(
        "\"format\":\"qemu-process\",\"pid\":%d,\"ram_block\":\"%s\",\"layout_from\":\"%s\",\"ram\":[%s]", pid_,
        layout_.block, source_, regions);
    if (cr3_ != 0) h += absl::StrFormat(",\"dtb\":\"0x%x\"", cr3_);
    return h;
  }

  const char* why_no_run_control() const override {
    return "The memory backend only reads and writes the VM's RAM from the host: it cannot stop, step or set "
           "breakpoints (use the gdb backend against QEMU's gdbstub for that).";
  }

 private:
  absl::StatusOr<size_t> transfer(uint64_t address, uint8_t* data, size_t size, bool write) {
    size_t done = 0;
    while (done < size) {
      const uint64_t at = address + done;
      auto it = std::upper_bound(layout_.regions.begin(), layout_.regions.end(), at,
                                 [](uint64_t a, const ram_region& r) { return a < r.gpa_start; });
      if (it == layout_.regions.begin()) break;
      --it;
      if (at >= it->gpa_end) break;
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(it->gpa_end - at, size - done));
      iovec local{data + done, chunk};
      iovec remote{reinterpret_cast<void*>(host_base_ + it->block_offset + (at - it->gpa_start)), chunk};
      const ssize_t n = write ? ::process_vm_writev(pid_, &local, 1, &remote, 1, 0)
                              : ::process_vm_readv(pid_, &local, 1, &remote, 1, 0);
      if (n < 0) {
        if (errno == EPERM) {
          return absl::PermissionDeniedError(absl::StrFormat(
              "Access to QEMU process %d's memory was denied (EPERM). Run as the same user as QEMU and allow it in "
              "/proc/sys/kernel/yama/ptrace_scope (0 allows any same-user process; 1 only ancestors), or grant "
              "CAP_SYS_PTRACE.",
              pid_));
        }
        if (errno == ESRCH) return absl::UnavailableError(absl::StrFormat("QEMU process %d has exited", pid_));
        if (done > 0) break;
        return absl::NotFoundError(absl::StrFormat("physical 0x%x: %s", at, std::strerror(errno)));
      }
      done += static_cast<size_t>(n);
      if (static_cast<size_t>(n) != chunk) break;
    }
    if (done == 0)
      return absl::NotFoundError(
          absl::StrFormat("physical address 0x%x is not guest RAM%s", address, hint_for(address)));
    return done;
  }

  std::string hint_for(uint64_t address) const {
    if (source_ == "command line" && address >= kLowRamLimit) {
      return " known without QMP (only RAM below 2 GiB is; give qmp=SOCKET to derive the layout above it)";
    }
    return "";
  }

  int pid_;
  ram_layout layout_;
  uint64_t host_base_;
  uint64_t cr3_;
  std::string source_;
};

absl::StatusOr<ram_layout> layout_from_qmp(const std::string& socket, int timeout_ms) {
  absl::StatusOr<qmp_client> qmp = qmp_client::connect(socket, timeout_ms);
  if (!qmp.ok()) return qmp.status();
  absl::StatusOr<std::string> mtree = qmp->human("info mtree -f");
  if (!mtree.ok()) return mtree.status();
  return parse_flat_memory(*mtree);
}

}  // namespace

absl::StatusOr<memory_options> parse_memory_options(const std::string& connect, const std::string& options_json) {
  memory_options o;
  for (absl::string_view part : absl::StrSplit(connect, ',', absl::SkipWhitespace())) {
    const std::string token(part);
    const size_t eq = token.find('=');
    if (eq == std::string::npos) {
      if (absl::Status s = apply(o, "pid", token); !s.ok()) return s;
      continue;
    }
    if (absl::Status s = apply(o, token.substr(0, eq), token.substr(eq + 1)); !s.ok()) return s;
  }
  if (!options_json.empty()) {
    rapidjson::Document d;
    d.Parse(options_json.c_str(), options_json.size());
    if (d.HasParseError() || !d.IsObject())
      return absl::InvalidArgumentError("the memory backend's options must be a JSON object");
    for (auto& m : d.GetObject()) {
      const std::string key(m.name.GetString(), m.name.GetStringLength());
      std::string value;
      if (m.value.IsString()) {
        value.assign(m.value.GetString(), m.value.GetStringLength());
      } else if (m.value.IsUint64()) {
        value = std::to_string(m.value.GetUint64());
      } else {
        return absl::InvalidArgumentError(absl::StrFormat("option \"%s\" must be a string or a number", key));
      }
      if (absl::Status s = apply(o, key, value); !s.ok()) return s;
    }
  }
  return o;
}

absl::StatusOr<std::unique_ptr<snap::snapshot>> open_memory(const memory_options& options) {
  int pid = options.pid;
  if (pid == 0) {
    absl::StatusOr<int> found = find_qemu_pid();
    if (!found.ok()) return found.status();
    pid = *found;
  }
  const std::string maps_text = read_text(absl::StrFormat("/proc/%d/maps", pid));
  if (maps_text.empty()) {
    return absl::NotFoundError(
        absl::StrFormat("cannot read /proc/%d/maps: no such process, or it belongs to another user", pid));
  }
  const std::vector<std::string> argv =
      absl::StrSplit(read_text(absl::StrFormat("/proc/%d/cmdline", pid)), '\0', absl::SkipEmpty());
  ram_layout layout;
  std::string source;
  // The QMP socket: the one given, else the one QEMU's command line opened (tried briefly, as
  // another client may hold it), unless qmp=none.
  std::string qmp_path = options.qmp == "none" ? "" : options.qmp;
  const bool given = !qmp_path.empty();
  if (!given && options.qmp != "none") qmp_path = qmp_socket_from_cmdline(argv);
  if (!qmp_path.empty()) {
    absl::StatusOr<ram_layout> parsed = layout_from_qmp(qmp_path, given ? options.timeout_ms : 1000);
    if (parsed.ok()) {
      layout = std::move(*parsed);
      source = "qmp";
    } else if (given) {
      return parsed.status();
    }
  }
  if (source.empty()) {
    uint64_t ram = ram_size_from_cmdline(argv);
    if (ram == 0) ram = 128ull << 20;  // QEMU's default for x86
    layout.block = "RAM";
    layout.block_size = ram;
    layout.regions.push_back({0, std::min(ram, kLowRamLimit), 0});
    source = "command line";
  }
  absl::StatusOr<host_mapping> mapping = find_ram_mapping(parse_maps(maps_text), layout.block_size);
  if (!mapping.ok()) return mapping.status();
  auto snap = std::make_unique<memory_snapshot>(pid, std::move(layout), mapping->start, options.cr3, source);
  // One read up front, so that a denied ptrace_scope or a wrong pid shows at open.
  uint8_t probe[8];
  if (absl::StatusOr<size_t> n = snap->read_physical(0, probe); !n.ok()) return n.status();
  return std::unique_ptr<snap::snapshot>(std::move(snap));
}

}  // namespace toolhost::memory_backend
