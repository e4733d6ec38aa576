#include <toolhost/windump/dump_writer.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include <absl/strings/str_format.h>
#include <toolhost/windump/layout.hpp>

namespace toolhost::windump {
namespace {

namespace L = layout;

template <typename T>
void store(std::vector<uint8_t>& bytes, uint64_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof value);
}

struct run {
  uint64_t first_page;
  uint64_t page_count;
};

std::vector<run> page_runs(const std::vector<physical_range>& ranges) {
  std::vector<run> runs;
  for (const physical_range& r : ranges) {
    if (r.size == 0) continue;
    const uint64_t first = r.start / L::kPageSize;
    const uint64_t last = (r.start + r.size - 1) / L::kPageSize;
    runs.push_back({first, last - first + 1});
  }
  std::sort(runs.begin(), runs.end(), [](const run& a, const run& b) { return a.first_page < b.first_page; });
  std::vector<run> merged;
  for (const run& r : runs) {
    if (!merged.empty() && r.first_page <= merged.back().first_page + merged.back().page_count) {
      run& last = merged.back();
      last.page_count = std::max(last.first_page + last.page_count, r.first_page + r.page_count) - last.first_page;
    } else {
      merged.push_back(r);
    }
  }
  // The header's descriptor holds at most 42 runs: close the smallest holes (their pages are
  // then asked for like any other and come out as zeros).
  if (merged.size() > L::kMaxRuns) {
    std::vector<size_t> gaps(merged.size() - 1);
    for (size_t i = 0; i < gaps.size(); ++i) gaps[i] = i;
    auto gap = [&](size_t i) { return merged[i + 1].first_page - (merged[i].first_page + merged[i].page_count); };
    std::sort(gaps.begin(), gaps.end(), [&](size_t a, size_t b) { return gap(a) < gap(b); });
    std::vector<bool> close(merged.size(), false);
    for (size_t k = 0; k < merged.size() - L::kMaxRuns; ++k) close[gaps[k]] = true;
    std::vector<run> fewer;
    for (size_t i = 0; i < merged.size(); ++i) {
      if (i > 0 && close[i - 1]) {
        fewer.back().page_count = merged[i].first_page + merged[i].page_count - fewer.back().first_page;
      } else {
        fewer.push_back(merged[i]);
      }
    }
    merged = std::move(fewer);
  }
  return merged;
}

std::vector<uint8_t> make_header(const full_dump_request& q, const std::vector<run>& runs, uint64_t pages) {
  std::vector<uint8_t> h(L::kHeaderSize, 0);
  // Unused header space reads "PAGE" in dumps Windows writes; readers rely on nothing there.
  for (uint64_t i = 0; i + 4 <= L::kHeaderSize; i += 4) store<uint32_t>(h, i, L::kSignature);
  store<uint32_t>(h, L::kOffSignature, L::kSignature);
  store<uint32_t>(h, L::kOffValidDump, L::kValidDump64);
  store<uint32_t>(h, L::kOffMajorVersion, q.major_version);
  store<uint32_t>(h, L::kOffMinorVersion, q.minor_version);
  store<uint64_t>(h, L::kOffDirectoryTableBase, q.directory_table_base);
  store<uint64_t>(h, L::kOffPfnDatabase, q.pfn_database);
  store<uint64_t>(h, L::kOffPsLoadedModuleList, q.ps_loaded_module_list);
  store<uint64_t>(h, L::kOffPsActiveProcessHead, q.ps_active_process_head);
  store<uint32_t>(h, L::kOffMachineImageType, L::kMachineAmd64);
  store<uint32_t>(h, L::kOffNumberProcessors, q.number_processors);
  store<uint32_t>(h, L::kOffBugCheckCode, q.bugcheck_code);
  store<uint32_t>(h, L::kOffBugCheckCode + 4, 0);
  for (int i = 0; i < 4; ++i) store<uint64_t>(h, L::kOffBugCheckParameters + 8ull * i, q.bugcheck_parameters[i]);
  std::memset(h.data() + L::kOffVersionUser, 0, 32);
  store<uint64_t>(h, L::kOffKdDebuggerDataBlock, q.kd_debugger_data_block);

  std::memset(h.data() + L::kOffPhysicalMemoryBlock, 0, L::kPhysicalMemoryBlockSize);
  store<uint32_t>(h, L::kOffPhysicalMemoryBlock, static_cast<uint32_t>(runs.size()));
  store<uint64_t>(h, L::kOffPhysicalMemoryBlock + 8, pages);
  for (size_t i = 0; i < runs.size(); ++i) {
    const uint64_t at = L::kOffPhysicalMemoryBlock + L::kRunsOffset + 16 * i;
    store<uint64_t>(h, at, runs[i].first_page);
    store<uint64_t>(h, at + 8, runs[i].page_count);
  }

  namespace C = L::context;
  const uint64_t c = L::kOffContextRecord;
  std::memset(h.data() + c, 0, 3000);
  const amd64_context& x = q.context;
  store<uint32_t>(h, c + C::kContextFlags, C::kFlagsAmd64Full);
  store<uint32_t>(h, c + C::kMxCsr, 0x1f80);
  store<uint16_t>(h, c + C::kSegCs, x.cs);
  store<uint16_t>(h, c + C::kSegDs, x.ds);
  store<uint16_t>(h, c + C::kSegEs, x.es);
  store<uint16_t>(h, c + C::kSegFs, x.fs);
  store<uint16_t>(h, c + C::kSegGs, x.gs);
  store<uint16_t>(h, c + C::kSegSs, x.ss);
  store<uint32_t>(h, c + C::kEFlags, x.eflags);
  store<uint64_t>(h, c + C::kRax, x.rax);
  store<uint64_t>(h, c + C::kRcx, x.rcx);
  store<uint64_t>(h, c + C::kRdx, x.rdx);
  store<uint64_t>(h, c + C::kRbx, x.rbx);
  store<uint64_t>(h, c + C::kRsp, x.rsp);
  store<uint64_t>(h, c + C::kRbp, x.rbp);
  store<uint64_t>(h, c + C::kRsi, x.rsi);
  store<uint64_t>(h, c + C::kRdi, x.rdi);
  const uint64_t high[] = {x.r8, x.r9, x.r10, x.r11, x.r12, x.r13, x.r14, x.r15};
  for (int i = 0; i < 8; ++i) store<uint64_t>(h, c + C::kR8 + 8ull * i, high[i]);
  store<uint64_t>(h, c + C::kRip, x.rip);

  std::memset(h.data() + L::kOffException, 0, L::kOffDumpType - L::kOffException);
  store<uint32_t>(h, L::kOffDumpType, L::kTypeFull);
  store<uint32_t>(h, L::kOffDumpType + 4, 0);
  store<uint64_t>(h, L::kOffRequiredDumpSpace, L::kHeaderSize + pages * L::kPageSize);
  store<uint64_t>(h, L::kOffSystemTime, 0);
  std::memset(h.data() + L::kOffComment, 0, 128);
  std::memcpy(h.data() + L::kOffComment, q.comment.data(), std::min<size_t>(q.comment.size(), 127));
  store<uint64_t>(h, L::kOffSystemUpTime, 0);
  return h;
}

absl::Status write_all(int fd, const uint8_t* data, size_t size, const std::string& path) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return absl::InternalError(absl::StrFormat("cannot write %s: %s", path, std::strerror(errno)));
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<full_dump_result> write_full_dump(const std::string& path, const full_dump_request& request,
                                                 const read_page_fn& read_page,
                                                 const std::function<bool()>& cancelled) {
  const std::vector<run> runs = page_runs(request.ranges);
  if (runs.empty()) return absl::InvalidArgumentError("nothing to dump: no physical memory ranges were given");
  uint64_t pages = 0;
  for (const run& r : runs) pages += r.page_count;

  const std::string temp = path + ".partial";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return absl::InternalError(absl::StrFormat("cannot create %s: %s", temp, std::strerror(errno)));
  auto fail = [&](absl::Status s) {
    ::close(fd);
    ::unlink(temp.c_str());
    return s;
  };

  const std::vector<uint8_t> header = make_header(request, runs, pages);
  if (absl::Status s = write_all(fd, header.data(), header.size(), temp); !s.ok()) return fail(s);

  full_dump_result result;
  constexpr size_t kBatch = 64;  // pages per write
  std::vector<uint8_t> buffer(kBatch * L::kPageSize);
  for (const run& r : runs) {
    for (uint64_t done = 0; done < r.page_count;) {
      if (cancelled && cancelled()) return fail(absl::CancelledError("the dump was cancelled; nothing was written"));
      const size_t batch = static_cast<size_t>(std::min<uint64_t>(kBatch, r.page_count - done));
      for (size_t i = 0; i < batch; ++i) {
        std::span<uint8_t> page(buffer.data() + i * L::kPageSize, L::kPageSize);
        if (!read_page((r.first_page + done + i) * L::kPageSize, page).ok()) {
          std::fill(page.begin(), page.end(), 0);
          ++result.pages_unreadable;
        }
      }
      if (absl::Status s = write_all(fd, buffer.data(), batch * L::kPageSize, temp); !s.ok()) return fail(s);
      done += batch;
      result.pages_written += batch;
    }
  }
  if (::fsync(fd) != 0)
    return fail(absl::InternalError(absl::StrFormat("cannot flush %s: %s", temp, std::strerror(errno))));
  ::close(fd);
  if (::rename(temp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(temp.c_str());
    return absl::InternalError(absl::StrFormat("cannot rename %s to %s: %s", temp, path, std::strerror(e)));
  }
  result.bytes = L::kHeaderSize + pages * L::kPageSize;
  return result;
}

}  // namespace toolhost::windump
