#include "atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace toolhost::eleven {
namespace {

absl::Status errno_status(const std::string& what) {
  return absl::UnavailableError(what + ": " + std::strerror(errno));
}

}  // namespace

absl::Status write_file_atomically(const std::filesystem::path& path, std::string_view data, unsigned mode) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const std::string temp = (dir / ("." + path.filename().string() + ".tmp-" + std::to_string(::getpid()))).string();
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return errno_status("cannot create " + temp);
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      absl::Status s = errno_status("cannot write " + temp);
      ::close(fd);
      ::unlink(temp.c_str());
      return s;
    }
    done += static_cast<size_t>(n);
  }
  // The mode given to open() is filtered by the umask; the copy of an executable must stay one.
  ::fchmod(fd, mode);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    absl::Status s = errno_status("cannot flush " + temp);
    ::unlink(temp.c_str());
    return s;
  }
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    absl::Status s = errno_status("cannot replace " + path.string());
    ::unlink(temp.c_str());
    return s;
  }
  // The rename itself is durable only once the directory is flushed.
  if (const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC); dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return absl::OkStatus();
}

}  // namespace toolhost::eleven
