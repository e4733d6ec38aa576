// The x64 PE unwinder: a module's .pdata (RUNTIME_FUNCTION) and UNWIND_INFO, applied as Windows'
// RtlVirtualUnwind applies them, behind the stack walker's seam (frame_unwinder.hpp).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include <toolhost/pe/image.hpp>
#include <toolhost/symbols/symbol_path.hpp>

#include "frame_unwinder.hpp"

namespace toolhost::debugger {

// Null when the image is not x64 or has no readable .pdata (the walker then follows rbp).
// `base` is where the image is loaded; the image may be a file or the loaded image in memory.
std::shared_ptr<const frame_unwinder> make_pe_unwinder(std::shared_ptr<const pe::image> image, uint64_t base);

// For a loaded image whose .pdata is paged out: the image file `file_name` from the symbol path
// by its store key (TimeDateStamp and SizeOfImage of the loaded header), as WinDbg fetches it,
// (a local folder or store, or a symbol server's `<name>/<key>/<name>` into its cache), and an
// unwinder over that file's .pdata. `where` says which file, and the URL when it was downloaded.
// Null, with the reason in `problem`, when not found.
std::shared_ptr<const frame_unwinder> unwinder_from_image_file(const symbols::symbol_path& path,
                                                               const std::string& file_name, const pe::image& loaded,
                                                               uint64_t base, std::chrono::milliseconds timeout,
                                                               std::function<bool()> cancelled, std::string& where,
                                                               std::string& problem);

}  // namespace toolhost::debugger
