#include <toolhost/mcp_client/stdio_transport.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <vector>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <toolhost/mcp_client/json_rpc.hpp>

extern char** environ;

namespace toolhost::mcp_client {
namespace {

constexpr size_t kTailBytes = 2000;
// A requester reading for itself watches the pipe this long before it sleeps in poll(): a quick
// upstream (a lookup, an echo) answers within it, and a thread asleep in poll() pays a wakeup,
// 35-60 us on a virtual machine whose idle CPU must be woken too (bench/rea-filter). Slow calls
// sleep as before; this costs at most this much CPU per call.
constexpr auto kAnswerSpin = std::chrono::microseconds(300);
// How often a requester reading for itself looks at `done` (a cancellation, an answer another
// requester's read delivered).
constexpr int kDonePollMs = 10;
// How long the reader thread leaves the role to requesters after one last read: while calls
// follow each other, they read for themselves and the reader thread sleeps. A notification that
// arrives between calls waits at most this long.
constexpr auto kReaderPause = std::chrono::milliseconds(20);

// The transport whose stdout or stderr the current thread reads, if any (see close()).
thread_local const stdio_transport* t_running_for = nullptr;

std::string errno_text(int err) { return std::strerror(err); }

// Writes all of `data`, with SIGPIPE blocked on this thread so that a dead child turns into
// EPIPE instead of killing the whole host.
bool write_all(int fd, std::string_view data) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  bool ok = true;
  bool got_epipe = false;
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      got_epipe = errno == EPIPE;
      ok = false;
      break;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (got_epipe) {
    // Consume the SIGPIPE raised for this thread before unblocking it.
    const timespec zero{0, 0};
    sigtimedwait(&block, nullptr, &zero);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    return "was killed by signal " + std::to_string(WTERMSIG(status)) +
           (name != nullptr ? std::string(" (SIG") + name + ")" : std::string());
  }
  return "stopped";
}

}  // namespace

std::string upstream_spec::describe() const {
  if (!url.empty()) return url;
  std::string out = "`";
  for (size_t i = 0; i < command.size(); ++i) {
    if (i != 0) out += ' ';
    out += command[i];
  }
  return out + "`";
}

absl::Status stdio_transport::start(transport_events events) {
  if (spec_.command.empty() || spec_.command.front().empty()) {
    return absl::InvalidArgumentError("the upstream command is empty");
  }
  events_ = std::move(events);

  int in_pipe[2], out_pipe[2], err_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe: " + errno_text(errno));
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return absl::InternalError("pipe: " + errno_text(errno));
  }
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) ::close(fd);
    return absl::InternalError("pipe: " + errno_text(errno));
  }

  // The environment: ours, with the configured variables added or replaced.
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string_view kv(*e);
    const size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env[std::string(kv.substr(0, eq))] = std::string(kv.substr(eq + 1));
  }
  for (const auto& [k, v] : spec_.env) env[k] = v;
  std::vector<std::string> env_strings;
  env_strings.reserve(env.size());
  for (const auto& [k, v] : env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec_.command;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!spec_.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, spec_.cwd.c_str());
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  // A process group of its own, so that stopping it also stops what it started (npx -> node).
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  sigaddset(&defaults, SIGTERM);
  sigaddset(&defaults, SIGINT);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return absl::FailedPreconditionError("could not start " + spec_.describe() + ": " + errno_text(rc));
  }
  pid_ = pid;
  stdin_fd_ = in_pipe[1];
  stdout_fd_ = out_pipe[0];
  stderr_fd_ = err_pipe[0];
  kick_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  stderr_thread_ = std::thread([this] {
    t_running_for = this;
    read_stderr();
  });
  stdout_thread_ = std::thread([this] {
    t_running_for = this;
    read_stdout();
  });
  return absl::OkStatus();
}

absl::Status stdio_transport::send(std::string_view json) {
  std::lock_guard lock(write_mutex_);
  if (stdin_fd_ < 0) return absl::UnavailableError("the upstream " + spec_.describe() + " is not running");
  std::string line(json);
  line += '\n';
  if (!write_all(stdin_fd_, line)) {
    return absl::UnavailableError("could not write to the upstream " + spec_.describe() + ": it closed its input");
  }
  return absl::OkStatus();
}

bool stdio_transport::read_available() {
  {
    std::lock_guard lock(state_mutex_);
    if (!broken_.empty()) return false;
  }
  ssize_t n = 0;
  do {
    n = ::read(stdout_fd_, read_buffer_.data(), read_buffer_.size());
  } while (n < 0 && errno == EINTR);
  if (n <= 0) {
    output_ended_ = true;
    return false;
  }
  absl::Status s = splitter_.feed(std::string_view(read_buffer_.data(), static_cast<size_t>(n)),
                                  [this](std::string_view line) { events_.on_message(line); });
  if (s.ok()) return true;
  {
    std::lock_guard lock(state_mutex_);
    broken_ = std::string(s.message());
  }
  output_ended_ = true;
  ::kill(-pid_, SIGKILL);  // it broke the framing; there is no way to resynchronise
  return false;
}

void stdio_transport::kick_reader() {
  const uint64_t one = 1;
  if (kick_fd_ >= 0) (void)!::write(kick_fd_, &one, sizeof one);
}

bool stdio_transport::read_until(const std::function<bool()>& done, std::chrono::steady_clock::time_point deadline) {
  if (kick_fd_ < 0 || closing_ || output_ended_) return false;
  bool expected = false;
  if (!requester_reading_.compare_exchange_strong(expected, true)) return false;
  kick_reader();
  {
    std::lock_guard reading(read_mutex_);
    const auto spin_until = std::chrono::steady_clock::now() + kAnswerSpin;
    while (!output_ended_ && !done()) {
      const auto now = std::chrono::steady_clock::now();
      if (now >= deadline) break;
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count();
      pollfd p{stdout_fd_, POLLIN, 0};
      const int ready =
          ::poll(&p, 1, now < spin_until ? 0 : static_cast<int>(std::clamp<long long>(left, 1, kDonePollMs)));
      if (ready < 0 && errno != EINTR) break;
      if (ready > 0 && !read_available()) break;  // the reader thread reports the end
      if (ready == 0 && now < spin_until) std::this_thread::yield();
    }
    last_requester_read_ = std::chrono::steady_clock::now();
  }
  // The reader thread is not woken: it looks again within kReaderPause, and meanwhile a waiting
  // requester takes the role (connection::request retries), so a busy proxy does not wake it
  // twice per request.
  requester_reading_ = false;
  return true;
}

void stdio_transport::read_stdout() {
  for (;;) {
    if (requester_reading_ || std::chrono::steady_clock::now() - last_requester_read_.load() < kReaderPause) {
      std::this_thread::sleep_for(kReaderPause);
      continue;
    }
    std::lock_guard reading(read_mutex_);
    if (requester_reading_) continue;  // one took the role meanwhile; wait it out
    pollfd fds[2] = {{stdout_fd_, POLLIN, 0}, {kick_fd_, POLLIN, 0}};
    const int ready = ::poll(fds, kick_fd_ >= 0 ? 2 : 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (kick_fd_ >= 0 && fds[1].revents != 0) {
      uint64_t count = 0;
      (void)!::read(kick_fd_, &count, sizeof count);
    }
    if (fds[0].revents != 0 && !read_available()) break;
  }
  std::string why;
  {
    std::lock_guard lock(state_mutex_);
    why = broken_;
  }
  // Output closed: the process is gone or about to be. Give it a moment to be reaped so the
  // message can say how it ended.
  std::string ended;
  if (reap(closing_ ? 5000 : 2000)) {
    ended = exit_text_;
  } else {
    ended = "closed its output but is still running";
  }
  std::string reason = "the upstream " + spec_.describe() + " " + (why.empty() ? ended : why);
  if (!closing_) {
    const std::string tail = stderr_tail();
    if (!tail.empty()) reason += "; its last words on stderr: " + tail;
  }
  std::call_once(closed_once_, [&] { events_.on_closed(reason); });
}

void stdio_transport::read_stderr() {
  std::vector<char> buffer(4096);
  for (;;) {
    const ssize_t n = ::read(stderr_fd_, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    // The host's stderr is the log; fd 1 belongs to the protocol and is never touched here.
    (void)!::write(2, buffer.data(), static_cast<size_t>(n));
    std::lock_guard lock(state_mutex_);
    tail_.append(buffer.data(), static_cast<size_t>(n));
    if (tail_.size() > kTailBytes) tail_.erase(0, tail_.size() - kTailBytes);
  }
  stderr_done_ = true;
}

std::string stdio_transport::stderr_tail() {
  // Give the stderr reader a moment to drain what the process wrote before dying.
  for (int i = 0; i < 40 && !stderr_done_; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::lock_guard lock(state_mutex_);
  std::string t = tail_;
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  const size_t cut = t.size() > 400 ? t.size() - 400 : 0;
  t = t.substr(cut);
  for (char& c : t) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return t;
}

bool stdio_transport::reap(int ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  for (;;) {
    {
      std::lock_guard lock(state_mutex_);
      if (reaped_) return true;
      int status = 0;
      const pid_t r = ::waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        reaped_ = true;
        exit_text_ = describe_status(status);
        return true;
      }
      if (r < 0 && errno == ECHILD) {
        reaped_ = true;
        exit_text_ = "ended";
        return true;
      }
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void stdio_transport::close() {
  if (pid_ == 0) return;
  if (closing_.exchange(true)) {
    // A second close: just make sure the threads are gone.
  } else {
    {
      std::lock_guard lock(write_mutex_);
      if (stdin_fd_ >= 0) ::close(stdin_fd_);
      stdin_fd_ = -1;
    }
    // MCP's stdio shutdown: close stdin, wait, then SIGTERM, then SIGKILL.
    if (!reap(2000)) {
      ::kill(-pid_, SIGTERM);
      if (!reap(2000)) {
        ::kill(-pid_, SIGKILL);
        reap(5000);
      }
    } else {
      ::kill(-pid_, SIGTERM);  // whatever it left behind in its group
    }
  }
  const bool own_thread = t_running_for == this;
  std::thread threads[2];
  {
    std::unique_lock lock(threads_mutex_);
    if (threads_taken_) {
      if (!own_thread) threads_ended_.wait(lock, [this] { return threads_gone_; });
      return;
    }
    threads_taken_ = true;
    threads[0] = std::move(stdout_thread_);
    threads[1] = std::move(stderr_thread_);
  }
  const auto self = std::this_thread::get_id();
  for (std::thread& t : threads) {
    if (!t.joinable()) continue;
    if (t.get_id() == self) {
      t.detach();
    } else {
      t.join();
    }
  }
  for (int* fd : {&stdout_fd_, &stderr_fd_, &kick_fd_}) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
  }
  std::lock_guard lock(threads_mutex_);
  threads_gone_ = true;
  threads_ended_.notify_all();
}

}  // namespace toolhost::mcp_client
