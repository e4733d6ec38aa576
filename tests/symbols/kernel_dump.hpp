// The fixture kernel the symbol tests open: wsfix.sys and wsdrv.sys at module bases in a
// Windows crash dump written by the project's dump writer, listed in PsLoadedModuleList.
#pragma once

#include <unistd.h>
#include <filesystem>
#include <functional>
#include <string>

#include "kernel_memory.hpp"
#include "oracle.hpp"

namespace toolhost::test::windows {

inline constexpr uint64_t kModuleList = 0xfffff80000050000;
inline constexpr uint64_t kEntries = 0xfffff80000051000;
inline constexpr uint64_t kFixBase = 0xfffff80001000000;
inline constexpr uint64_t kDrvBase = 0xfffff80002000000;

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("toolhost-symbols-" + std::to_string(getpid()) + "-" + name))
      .string();
}

// `edit` may change memory before the dump is written (values to show, pages to drop).
inline std::string make_kernel_dump(const std::string& name, const std::function<void(kernel_memory&)>& edit = {}) {
  kernel_memory k;
  std::vector<kernel_module> modules = {
      {fixture("wsfix.sys"), kFixBase, "wsfix.sys", "\\SystemRoot\\system32\\drivers\\wsfix.sys"},
      {fixture("wsdrv.sys"), kDrvBase, "wsdrv.sys", "\\SystemRoot\\system32\\drivers\\wsdrv.sys"}};
  for (auto& m : modules) k.load_image(m);
  k.module_list(kModuleList, kEntries, modules);
  if (edit) edit(k);
  const std::string path = temp_path(name);
  // rip outside every module: nothing loads at open.
  if (!k.write_dump(path, kModuleList, kEntries).ok()) throw std::runtime_error("cannot write " + path);
  return path;
}

}  // namespace toolhost::test::windows
