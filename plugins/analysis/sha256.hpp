// SHA-256 of a file's bytes, as lowercase hex: the key the analysis cache and REA's evidence
// records use.
#pragma once

#include <string>
#include <string_view>

namespace toolhost::analysis_server {

std::string sha256_hex(std::string_view bytes);

}  // namespace toolhost::analysis_server
