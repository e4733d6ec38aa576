// The tool's answer: structured content (see kOutputSchema) and a short text for people.
#pragma once

#include <string>

#include "profile_metrics.hpp"

namespace toolhost::gpu_profile {

extern const char* const kOutputSchema;

struct recording_info {
  std::string path;
  std::string modified;  // ISO 8601, UTC
};

// The structured content: a JSON object matching kOutputSchema. Lists are bounded (kMaxListed).
std::string report_json(const profile& p, const recording_info& recording, const std::vector<std::string>& suggestions);

// A few plain sentences with the headline numbers and the suggestions.
std::string report_text(const profile& p, const recording_info& recording, const std::vector<std::string>& suggestions);

}  // namespace toolhost::gpu_profile
