// libFuzzer: arbitrary bytes as an ELF or PE file (by its magic), through the whole analysis:
// the image (segments, sections, .eh_frame or .pdata, init arrays or TLS callbacks, imports, the
// truncation checks), the reference sweep, function discovery, strings, names, and per-function
// decoding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <toolhost/analysis/function_body.hpp>
#include <toolhost/analysis/program_analysis.hpp>
#include <toolhost/elf/elf_file.hpp>
#include <toolhost/pe/image.hpp>

namespace an = toolhost::analysis;

namespace {

std::optional<an::image> image_of(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  if (size >= 2 && data[0] == 'M' && data[1] == 'Z') {
    auto pe = toolhost::pe::image::from_bytes(std::move(bytes), "fuzz");
    if (!pe.ok() || pe->sections().size() > 96) return std::nullopt;
    (void)an::pe_truncation(*pe);
    return an::image_from_pe(std::make_shared<const toolhost::pe::image>(std::move(*pe)));
  }
  auto file = toolhost::elf::elf_file::parse(std::move(bytes), "fuzz");
  if (!file.ok()) return std::nullopt;
  (void)an::elf_truncation(*file);
  if (file->sections().size() > 256) return std::nullopt;  // keep one input's work short
  return an::image_from_elf(std::make_shared<const toolhost::elf::elf_file>(std::move(*file)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto img = image_of(data, size);
  if (!img) return 0;
  (void)img->read(img->entry(), 64);
  an::analysis_options options;
  options.threads = 1;
  auto done = an::program_analysis::run(std::move(*img), options);
  if (!done.ok()) return 0;
  const an::program_analysis& a = **done;
  size_t n = 0;
  for (const an::function& f : a.functions().all()) {
    if (n++ == 8) break;
    const auto body = an::decode_function(a.img(), f, 256);
    (void)a.functions().containing(f.address + 1);
    (void)a.references().to(f.address, f.end);
    (void)body;
  }
  n = 0;
  for (const an::string_entry& s : a.strings()) {
    if (n++ == 8) break;
    (void)an::string_text(a.img(), s, 64);
  }
  (void)a.find_name("main");
  return 0;
}
