#include "program.hpp"

#include <thread>

#include <toolhost/analysis/code_scan.hpp>

namespace toolhost::eleven {

absl::StatusOr<program> program::open(const std::filesystem::path& path) {
  auto file = elf::elf_file::open(path);
  if (!file.ok()) return file.status();
  return from_elf(std::move(*file), std::filesystem::absolute(path).lexically_normal());
}

program program::from_elf(elf::elf_file file, const std::filesystem::path& path) {
  auto shared = std::make_shared<const elf::elf_file>(std::move(file));
  analysis::image img = analysis::image_from_elf(shared);
  program p(std::move(shared), std::move(img));
  p.path_ = path;
  std::vector<disasm::code_reference> references;
  if (analysis::decoding_mode(p.image_)) {
    auto scan = analysis::scan_code(p.image_, analysis::known_function_starts(p.image_),
                                    std::max(1u, std::thread::hardware_concurrency()));
    if (scan.ok()) references = std::move(scan->references);
  }
  p.discovered_ = analysis::function_table::discover(p.image_, references);
  p.rebuild();
  return p;
}

void program::set_procedures(const std::set<uint64_t>& addresses) {
  if (addresses == procedures_) return;  // most edits leave them alone; rebuilding copies every function
  procedures_ = addresses;
  rebuild();
}

void program::rebuild() {
  const analysis::function_table table =
      procedures_.empty() ? discovered_ : discovered_.with_starts(image_, procedures_, analysis::from_user);
  functions_.clear();
  for (const analysis::function& f : table.all()) {
    function_info info;
    info.address = f.address;
    info.end = f.end;
    info.original_name = f.name;
    info.from_symbol = f.named_by_symbol;
    functions_.emplace_hint(functions_.end(), f.address, std::move(info));
  }
}

const function_info* program::function_starting(uint64_t address) const {
  auto it = functions_.find(address);
  return it == functions_.end() ? nullptr : &it->second;
}

const function_info* program::function_containing(uint64_t address) const {
  auto it = functions_.upper_bound(address);
  if (it == functions_.begin()) return nullptr;
  const function_info& f = std::prev(it)->second;
  return address < f.end ? &f : nullptr;
}

bool program::is_mapped(uint64_t address) const { return image_.section_at(address) != nullptr; }

bool program::is_code(uint64_t address) const { return image_.is_code(address); }

bool program::has_file_bytes(uint64_t address, size_t size) const {
  return size == 0 || !image_.file_bytes(address, size).empty();
}

}  // namespace toolhost::eleven
