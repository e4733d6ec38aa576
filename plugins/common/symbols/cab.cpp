#include "cab.hpp"

#include <mspack.h>

namespace toolhost::symbols {

absl::Status expand_cabinet(const std::string& cabinet, const std::string& output) {
  mscab_decompressor* d = mspack_create_cab_decompressor(nullptr);
  if (d == nullptr) return absl::InternalError("libmspack could not make a CAB decompressor");
  mscabd_cabinet* cab = d->open(d, const_cast<char*>(cabinet.c_str()));
  absl::Status result;
  if (cab == nullptr) {
    result = absl::InvalidArgumentError(cabinet + " is not a readable CAB file (libmspack error " +
                                        std::to_string(d->last_error(d)) + ")");
  } else if (cab->files == nullptr) {
    result = absl::InvalidArgumentError(cabinet + " holds no file");
  } else if (int e = d->extract(d, cab->files, const_cast<char*>(output.c_str())); e != MSPACK_ERR_OK) {
    result = absl::InvalidArgumentError(cabinet + " could not be expanded (libmspack error " + std::to_string(e) + ")");
  }
  if (cab != nullptr) d->close(d, cab);
  mspack_destroy_cab_decompressor(d);
  return result;
}

}  // namespace toolhost::symbols
