// REA's evidence records: every answer of a native or enhanced tool is an observation with an
// id ("ev_" + 64 hex) that rea://evidence/{id} reads back in full (REA's Evidence v2 record).
// The store keeps the newest records up to a byte budget; an id whose record was dropped reads
// as not found, with a sentence saying why.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace toolhost::analysis_server {

struct evidence_subject {
  std::string name;
  std::string sha256;
  std::string format;                       // "elf", "pe"
  std::optional<std::string> architecture;  // "x86", "x86_64"
  std::string local_path;
};

inline constexpr std::string_view kProviderId = "toolhost-analysis";
inline constexpr std::string_view kProviderName = "toolhost native analysis";
inline constexpr std::string_view kProviderVersion = "1.0.0";

class evidence_store {
 public:
  explicit evidence_store(size_t max_bytes) : max_bytes_(max_bytes) {}

  // Records one observation and returns its id. `parameters_json` and `result_json` are JSON
  // values; the id is the SHA-256 of the record without its id and local path, so the same
  // question about the same bytes has the same id.
  std::string record(const std::optional<evidence_subject>& subject, std::string_view operation,
                     std::string_view parameters_json, std::string_view result_json,
                     const std::vector<std::string>& limitations);
  // The whole record as JSON text.
  std::optional<std::string> read(std::string_view id) const;

 private:
  size_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<std::string> order_;  // ids, newest last
  std::map<std::string, std::pair<std::string, std::list<std::string>::iterator>, std::less<>> records_;
  size_t bytes_ = 0;
};

}  // namespace toolhost::analysis_server
