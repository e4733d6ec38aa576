// libFuzzer: arbitrary bytes as an ELF file, through the whole analysis: the image (segments,
// sections, .eh_frame, init arrays, truncation check), the reference sweep, function discovery,
// strings, names, and per-function decoding.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <toolhost/analysis/function_body.hpp>
#include <toolhost/analysis/program_analysis.hpp>
#include <toolhost/elf/elf_file.hpp>

namespace an = toolhost::analysis;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto file = toolhost::elf::elf_file::parse(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!file.ok()) return 0;
  (void)an::elf_truncation(*file);
  if (file->sections().size() > 256) return 0;  // keep one input's work short
  an::image img = an::image_from_elf(std::make_shared<const toolhost::elf::elf_file>(std::move(*file)));
  (void)img.read(img.entry(), 64);
  an::analysis_options options;
  options.threads = 1;
  auto done = an::program_analysis::run(std::move(img), options);
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
