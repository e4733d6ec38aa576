// Symbols of a PE module from its export table (names and RVAs; forwarders are not
// addresses), with function extents from .pdata.
#pragma once

#include <memory>

#include <absl/status/statusor.h>
#include <toolhost/pe/image.hpp>

#include "symbol_source.hpp"
#include "symbols.hpp"

namespace toolhost::debugger {

// nullptr when the image exports nothing; an error when its export table cannot be read.
absl::StatusOr<std::shared_ptr<const symbol_source>> make_export_source(const pe::image& image, std::string file);

// lmv's facts for a PE image: image name, timestamp, checksum, size, PDB identity.
std::vector<std::pair<std::string, std::string>> pe_facts(const pe::image& image, const std::string& path);

}  // namespace toolhost::debugger
