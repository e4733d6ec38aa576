// Where a QEMU guest's physical memory lives in the QEMU process: the guest-physical ranges
// backed by the main RAM block (from the machine's flat memory view, `info mtree -f`), and the
// block's host mapping (from /proc/PID/maps).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <absl/status/statusor.h>

namespace toolhost::memory_backend {

struct ram_region {
  uint64_t gpa_start = 0;
  uint64_t gpa_end = 0;       // exclusive
  uint64_t block_offset = 0;  // of gpa_start inside the RAM block
};

struct ram_layout {
  std::string block;                // e.g. "pc.ram"
  std::vector<ram_region> regions;  // sorted by gpa_start
  uint64_t block_size = 0;          // highest block_offset + length seen
};

// Parses `info mtree -f`: the flat view of address space "memory", RAM regions of the block
// that backs guest-physical address 0.
absl::StatusOr<ram_layout> parse_flat_memory(const std::string& mtree);

struct host_mapping {
  uint64_t start = 0;
  uint64_t end = 0;
  bool readable = false;
  bool writable = false;
  std::string path;  // empty for anonymous memory
};

std::vector<host_mapping> parse_maps(const std::string& text);

// The mapping that holds a RAM block of `size` bytes: an anonymous (or /dev/shm, memfd) rw
// mapping of exactly that size, else the largest rw mapping at least that big.
absl::StatusOr<host_mapping> find_ram_mapping(const std::vector<host_mapping>& maps, uint64_t size);

// The pid of the one running qemu-system-* process (by /proc/PID/comm); an error naming the
// candidates when there are none or several.
absl::StatusOr<int> find_qemu_pid();

// The Unix socket of QEMU's `-qmp unix:PATH[,...]` option, or "" when it has none.
std::string qmp_socket_from_cmdline(const std::vector<std::string>& argv);

// RAM size from a QEMU command line (-m SIZE or -m size=SIZE), in bytes; 0 when absent.
uint64_t ram_size_from_cmdline(const std::vector<std::string>& argv);

}  // namespace toolhost::memory_backend
