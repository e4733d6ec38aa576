// What the numbers suggest fixing, as a few plain sentences.
#pragma once

#include <string>
#include <vector>

#include "profile_metrics.hpp"

namespace toolhost::gpu_profile {

std::vector<std::string> suggest(const profile& p);

// "12.3 ms", "850 us", "40 ns": a duration a person reads at a glance.
std::string human_duration(int64_t ns);

}  // namespace toolhost::gpu_profile
