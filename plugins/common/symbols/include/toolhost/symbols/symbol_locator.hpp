// Finding a PDB or an image on the symbol path: local folders and stores (one- and two-tier,
// compressed files, file.ptr), then symbol servers, each download checked before it is kept and
// stored in the caches in symbol-store layout (name/KEY/name), so WinDbg, IDA and Ghidra read
// them too.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <absl/status/status.h>

#include "toolhost/symbols/symbol_path.hpp"

namespace toolhost::symbols {

struct file_request {
  std::string name;  // "ntkrnlmp.pdb", "ntoskrnl.exe"
  std::string key;   // the store key: GUID+age for a PDB, TimeDateStamp+SizeOfImage for an image
  // Checks a candidate file; a mismatch (another build's PDB) is skipped, its message kept.
  std::function<absl::Status(const std::string& path)> verify;
  // Download progress: bytes so far, total (0: unknown), what is being fetched.
  std::function<void(uint64_t, uint64_t, const std::string&)> progress;
  std::function<bool()> cancelled;
  std::chrono::milliseconds timeout{20000};  // per server request
};

struct located {
  std::string path;    // the file to open
  std::string origin;  // where it came from: a folder, or the URL it was downloaded from
  bool downloaded = false;
};

struct locate_result {
  std::optional<located> found;
  // What was tried and why it did not do, one sentence each ("https://x/... answered 404").
  std::vector<std::string> notes;
  bool network_failed = false;  // a server could not be reached (no network, down, too slow)
};

locate_result locate(const symbol_path& path, const file_request& request);

// Where `name` with `key` lives in the store at `store` (two-tier when the store has index2.txt).
std::string store_file(const std::string& store, const std::string& name, const std::string& key);

// Forgets which servers failed recently (tests).
void forget_server_failures();

}  // namespace toolhost::symbols
