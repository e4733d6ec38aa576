// .dump /f FILE: a full Windows crash dump of whatever target is open, written by the shared
// dump writer (toolhost::windump) so that the dump backend reads it back.
#include <filesystem>

#include <toolhost/sdk/json.hpp>
#include <toolhost/windump/target_dump.hpp>

#include "command_line.hpp"
#include "session.hpp"

namespace toolhost::debugger {

absl::Status session::cmd_dump(const std::string& name, std::string_view args) {
  std::string_view rest = trim(args);
  if (rest.rfind("/f", 0) != 0 || (rest.size() > 2 && rest[2] != ' ')) {
    return usage_error(name, "only full dumps are written: .dump /f <file>");
  }
  const std::string path(trim(rest.substr(2)));
  if (path.empty()) return usage_error(name, ".dump /f needs the file to write");
  if (!target_->has(TOOLHOST_DT_CAP_READ_PHYSICAL)) {
    return absl::UnimplementedError("the " + target_->backend() +
                                    " backend cannot read physical memory, so it cannot be dumped");
  }
  windump::target_dump_options options;
  options.comment = "toolhost .dump /f";
  if (cancelled_ != nullptr) options.cancelled = *cancelled_;
  auto written = windump::dump_target(target_->raw(), path, options);
  if (!written.ok()) return written.status();
  std::error_code ec;
  const std::string where = std::filesystem::absolute(path, ec).string();
  out_ += "Dump written to " + where + ": " + std::to_string(written->pages_written) + " pages (" +
          std::to_string(written->bytes) + " bytes)";
  if (written->pages_unreadable > 0) {
    out_ += ", " + std::to_string(written->pages_unreadable) + " unreadable pages saved as zeros";
  }
  out_ += ".\n";
  result_json_ = R"({"file":)" + sdk::quote(where) + R"(,"pages":)" + std::to_string(written->pages_written) +
                 R"(,"unreadable_pages":)" + std::to_string(written->pages_unreadable) + R"(,"bytes":)" +
                 std::to_string(written->bytes) + "}";
  return absl::OkStatus();
}

}  // namespace toolhost::debugger
