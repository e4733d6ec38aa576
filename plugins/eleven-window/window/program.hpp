// The binary open in the window: its functions, named by symbols or, like Ghidra, FUN_<address>
// for code that nothing names. Discovery is toolhost::analysis's, shared with the analysis
// server, so the window and `analysis` agree on every function.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>

#include <absl/status/statusor.h>
#include <toolhost/analysis/functions.hpp>
#include <toolhost/analysis/image.hpp>
#include <toolhost/elf/elf_file.hpp>

namespace toolhost::eleven {

struct function_info {
  uint64_t address = 0;
  uint64_t end = 0;           // one past the last byte we attribute to it
  std::string original_name;  // the symbol, the import of a PLT stub, "entry", or FUN_<address>
  bool from_symbol = false;
};

class program {
 public:
  // Opens an ELF file and finds its functions (toolhost::analysis::function_table::discover).
  static absl::StatusOr<program> open(const std::filesystem::path& path);
  // The same for an ELF image already parsed; `path` is what the window reports as the file.
  static program from_elf(elf::elf_file file, const std::filesystem::path& path);

  const std::filesystem::path& path() const noexcept { return path_; }
  const elf::elf_file& elf() const noexcept { return *elf_; }
  const std::map<uint64_t, function_info>& functions() const noexcept { return functions_; }

  // Functions the project started with set_code_type procedure; they join the list.
  void set_procedures(const std::set<uint64_t>& addresses);

  const function_info* function_starting(uint64_t address) const;
  const function_info* function_containing(uint64_t address) const;
  bool is_mapped(uint64_t address) const;                    // inside a loaded section
  bool is_code(uint64_t address) const;                      // inside an executable section
  bool has_file_bytes(uint64_t address, size_t size) const;  // every byte backed by the file

 private:
  program(std::shared_ptr<const elf::elf_file> file, analysis::image img)
      : elf_(std::move(file)), image_(std::move(img)) {}
  void rebuild();

  std::filesystem::path path_;
  std::shared_ptr<const elf::elf_file> elf_;
  analysis::image image_;
  analysis::function_table discovered_;  // from the binary alone
  std::set<uint64_t> procedures_;
  std::map<uint64_t, function_info> functions_;  // discovered_ plus procedures_
};

}  // namespace toolhost::eleven
