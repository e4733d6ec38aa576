#include "host/plugins/isolation/frame.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace toolhost::plugins::isolation {
namespace {

void put_u32(std::string& out, uint32_t v) {
  char b[4] = {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16), static_cast<char>(v >> 24)};
  out.append(b, 4);
}

uint32_t get_u32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return uint32_t(u[0]) | uint32_t(u[1]) << 8 | uint32_t(u[2]) << 16 | uint32_t(u[3]) << 24;
}

}  // namespace

void encode(std::string& out, enum kind k, uint64_t id, std::initializer_list<std::string_view> fields) {
  const size_t at = out.size();
  put_u32(out, 0);  // the size, filled in below
  out.push_back(static_cast<char>(k));
  put_u32(out, static_cast<uint32_t>(id));
  put_u32(out, static_cast<uint32_t>(id >> 32));
  put_u32(out, static_cast<uint32_t>(fields.size()));
  for (std::string_view f : fields) {
    put_u32(out, static_cast<uint32_t>(f.size()));
    out.append(f);
  }
  const uint32_t size = static_cast<uint32_t>(out.size() - at - 4);
  std::string sz;
  put_u32(sz, size);
  std::memcpy(out.data() + at, sz.data(), 4);
}

channel::~channel() {
  if (fd_ >= 0) ::close(fd_);
}

bool channel::send(enum kind k, uint64_t id, std::initializer_list<std::string_view> fields) {
  std::lock_guard lock(send_mutex_);
  out_.clear();
  encode(out_, k, id, fields);
  for (size_t done = 0; done < out_.size();) {
    // MSG_NOSIGNAL: a child that died must not kill the parent with SIGPIPE.
    const ssize_t n = ::send(fd_, out_.data() + done, out_.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  if (out_.capacity() > (1u << 20)) std::string().swap(out_);  // a large result keeps no memory
  return true;
}

ssize_t channel::read_some(bool wait) {
  if (in_pos_ > 0 && in_pos_ == in_.size()) {
    in_.clear();
    in_pos_ = 0;
    if (in_.capacity() > (1u << 20)) std::string().swap(in_);  // a large frame keeps no memory
  }
  for (;;) {
    char buf[65536];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, wait ? 0 : MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && !wait && (errno == EAGAIN || errno == EWOULDBLOCK)) return -1;
    if (n <= 0) return 0;
    if (in_pos_ > 0) {
      in_.erase(0, in_pos_);
      in_pos_ = 0;
    }
    in_.append(buf, static_cast<size_t>(n));
    return n;
  }
}

bool channel::take(frame& out, std::string& error) {
  error.clear();
  const size_t have = in_.size() - in_pos_;
  if (have < 4) return false;
  const uint32_t size = get_u32(in_.data() + in_pos_);
  if (size < 13 || size > kMaxFrame) {
    error = "a frame of " + std::to_string(size) + " bytes";
    return false;
  }
  if (have < 4 + size) return false;
  const char* p = in_.data() + in_pos_ + 4;
  const char* end = p + size;
  out.kind = static_cast<enum kind>(static_cast<uint8_t>(p[0]));
  out.id = uint64_t(get_u32(p + 1)) | uint64_t(get_u32(p + 5)) << 32;
  const uint32_t count = get_u32(p + 9);
  p += 13;
  out.fields.resize(std::min<uint32_t>(count, size / 4));
  size_t i = 0;
  for (; i < count && i < out.fields.size(); ++i) {
    if (end - p < 4) break;
    const uint32_t len = get_u32(p);
    p += 4;
    if (static_cast<size_t>(end - p) < len) {
      error = "a field that runs past its frame";
      return false;
    }
    out.fields[i].assign(p, len);  // reuses the field's buffer: a warm frame allocates nothing
    p += len;
  }
  if (i != count || p != end) {
    error = "a frame whose fields do not fill it";
    return false;
  }
  in_pos_ += 4 + size;
  return true;
}

bool channel::receive(frame& out, std::string& error) {
  for (;;) {
    if (closed()) return false;
    if (take(out, error)) return true;
    if (!error.empty() || read_some(true) == 0) {
      closed_.store(true, std::memory_order_release);
      return false;
    }
  }
}

channel::poll_result channel::try_receive(frame& out, std::string& error) {
  for (;;) {
    if (closed()) return poll_result::closed;
    if (take(out, error)) return poll_result::got;
    if (!error.empty()) {
      closed_.store(true, std::memory_order_release);
      return poll_result::closed;
    }
    const ssize_t n = read_some(false);
    if (n < 0) return poll_result::none;
    if (n == 0) {
      closed_.store(true, std::memory_order_release);
      return poll_result::closed;
    }
  }
}

void channel::shut() {
  closed_.store(true, std::memory_order_release);
  ::shutdown(fd_, SHUT_RDWR);
}

}  // namespace toolhost::plugins::isolation
