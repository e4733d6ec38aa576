// Analyses one file in process and prints how long it took and what it found, one line of
// "key value" pairs that bench/analysis/run reads:
//   toolhost_analysis_bench FILE [THREADS]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>

#include <toolhost/analysis/program_analysis.hpp>
#include <toolhost/elf/elf_file.hpp>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: toolhost_analysis_bench FILE [THREADS]\n");
    return 2;
  }
  using clock = std::chrono::steady_clock;
  const auto ms = [](clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); };
  const auto t0 = clock::now();
  auto elf = toolhost::elf::elf_file::open(argv[1]);
  if (!elf.ok()) {
    std::fprintf(stderr, "%s\n", std::string(elf.status().message()).c_str());
    return 1;
  }
  auto img = toolhost::analysis::image_from_elf(std::make_shared<const toolhost::elf::elf_file>(std::move(*elf)));
  const auto t1 = clock::now();
  toolhost::analysis::analysis_options options;
  if (argc > 2) options.threads = static_cast<unsigned>(std::atoi(argv[2]));
  auto done = toolhost::analysis::program_analysis::run(std::move(img), options);
  const auto t2 = clock::now();
  if (!done.ok()) {
    std::fprintf(stderr, "%s\n", std::string(done.status().message()).c_str());
    return 1;
  }
  const auto& a = **done;
  const auto& t = a.timings();
  std::printf("sweep_ms %.1f functions_ms %.1f strings_index_ms %.1f names_ms %.1f\n", t.sweep_ms, t.functions_ms,
              t.strings_and_index_ms, t.names_ms);
  std::printf("load_ms %.1f analyse_ms %.1f instructions %llu functions %zu references %zu strings %zu names %zu\n",
              ms(t1 - t0), ms(t2 - t1), static_cast<unsigned long long>(a.instructions()), a.functions().all().size(),
              a.references().size(), a.strings().size(), a.names().size());
  return 0;
}
