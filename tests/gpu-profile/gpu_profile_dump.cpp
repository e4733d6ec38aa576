// gpu_profile_dump TRACE [refresh_hz]: prints the structured gpu_profile report of one trace
// file, or the reader's error on stderr with exit status 2.
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "profile_metrics.hpp"
#include "profile_report.hpp"
#include "suggestions.hpp"
#include "trace_reader.hpp"

int main(int argc, char** argv) {
  namespace gp = toolhost::gpu_profile;
  if (argc < 2) {
    std::cerr << "usage: gpu_profile_dump TRACE [refresh_hz]\n";
    return 1;
  }
  auto trace = gp::read_trace(argv[1]);
  if (!trace.ok()) {
    std::cerr << trace.status().message() << "\n";
    return 2;
  }
  gp::profile_options options;
  if (argc > 2) options.refresh_hz = std::atof(argv[2]);
  const gp::profile p = gp::compute_profile(*trace, options);
  std::cout << gp::report_json(p, {argv[1], ""}, gp::suggest(p)) << "\n";
  return 0;
}
