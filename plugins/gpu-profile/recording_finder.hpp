// Finding the newest GPU recording in a folder.
#pragma once

#include <filesystem>
#include <optional>

#include <absl/status/statusor.h>

namespace toolhost::gpu_profile {

// The most recently modified recording directly inside `folder`: a trace file (.json, .xml,
// .sqlite, .nsys-rep) or an Instruments .trace bundle. nullopt when there is none or the
// folder does not exist.
std::optional<std::filesystem::path> newest_recording(const std::filesystem::path& folder);

// How to make a recording, for the answer when there is none.
std::string how_to_record(const std::filesystem::path& folder);

}  // namespace toolhost::gpu_profile
