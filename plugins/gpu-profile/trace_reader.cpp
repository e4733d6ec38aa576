#include "trace_reader.hpp"

#include <cctype>
#include <cstring>
#include <fstream>

namespace toolhost::gpu_profile {

uint64_t stream_size(std::FILE* in) {
  if (std::fseek(in, 0, SEEK_END) != 0) return 0;
  const long size = std::ftell(in);
  std::rewind(in);
  return size > 0 ? static_cast<uint64_t>(size) : 0;
}

absl::StatusOr<trace_model> read_trace(const std::filesystem::path& file, const read_control& control) {
  std::error_code ec;
  if (std::filesystem::is_directory(file, ec)) {
    if (file.extension() == ".trace") {
      return absl::FailedPreconditionError(
          file.string() +
          " is an Instruments .trace bundle, which only Xcode can read. Export its tables on the Mac "
          "with `xctrace export --input " +
          file.filename().string() +
          " --xpath '/trace-toc/run[@number=\"1\"]/data/table[@schema=\"metal-gpu-intervals\" or "
          "@schema=\"displayed-surfaces-interval\" or @schema=\"display-vsyncs-interval\"]' --output run.xml` "
          "and put run.xml in the recordings folder.");
    }
    return absl::InvalidArgumentError(file.string() + " is a folder, not a trace file");
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError("cannot open " + file.string());
  char head[64] = {};
  in.read(head, sizeof head);
  const auto n = static_cast<size_t>(in.gcount());
  if (n == 0) return absl::InvalidArgumentError(file.string() + " is empty");
  if (n >= 16 && std::memcmp(head, "SQLite format 3\0", 16) == 0) return read_nsys_sqlite(file, control);
  size_t i = 0;
  if (n >= 3 && std::memcmp(head, "\xEF\xBB\xBF", 3) == 0) i = 3;  // UTF-8 byte order mark
  while (i < n && std::isspace(static_cast<unsigned char>(head[i]))) ++i;
  if (i < n && head[i] == '<') return read_xctrace_xml(file, control);
  if (i < n && (head[i] == '{' || head[i] == '[')) return read_chrome_json(file, control);
  if (file.extension() == ".nsys-rep" || file.extension() == ".qdrep") {
    return absl::FailedPreconditionError(file.string() +
                                         " is an Nsight Systems report; convert it with `nsys export "
                                         "--type sqlite " +
                                         file.filename().string() + "` first");
  }
  return absl::InvalidArgumentError(file.string() +
                                    " is not a trace this tool reads (xctrace XML export, Chrome trace JSON, or "
                                    "Nsight Systems SQLite export)");
}

}  // namespace toolhost::gpu_profile
