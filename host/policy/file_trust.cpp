#include "host/policy/file_trust.hpp"

#include <grp.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include <toolhost/sdk/strings.hpp>

namespace toolhost::policy {
namespace {

std::string user_name(uid_t uid) {
  if (const passwd* pw = getpwuid(uid); pw != nullptr && pw->pw_name != nullptr) return pw->pw_name;
  return cat("uid ", uid);
}

std::string mode_text(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

// A group nobody but the file's owner belongs to: named after the owner, no other members.
bool private_group(gid_t gid, uid_t owner) {
  const group* g = getgrgid(gid);
  if (g == nullptr || g->gr_name == nullptr) return false;
  const std::string owner_name = user_name(owner);
  if (owner_name != g->gr_name) return false;
  for (char** member = g->gr_mem; member != nullptr && *member != nullptr; ++member) {
    if (owner_name != *member) return false;
  }
  return true;
}

absl::Status check(const std::string& path, std::string_view what, bool secret) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return absl::OkStatus();
  const uid_t me = ::geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    return absl::PermissionDeniedError(
        cat("the ", what, " ", path, " belongs to ", user_name(st.st_uid), ", not to you (", user_name(me),
            ") or root, so toolhost does not trust it: its owner could change what toolhost runs. If you trust it, "
            "take it over (sudo chown ",
            user_name(me), " ", path, ") or use a copy of your own"));
  }
  const bool others_write = (st.st_mode & S_IWOTH) != 0;
  const bool group_write = (st.st_mode & S_IWGRP) != 0 && !private_group(st.st_gid, st.st_uid);
  if (others_write || group_write) {
    const group* g = getgrgid(st.st_gid);
    const std::string who =
        others_write
            ? std::string("every user")
            : cat("the group ", g != nullptr && g->gr_name != nullptr ? std::string(g->gr_name) : cat(st.st_gid));
    return absl::PermissionDeniedError(cat("the ", what, " ", path, " is writable by ", who, " (mode ",
                                           mode_text(st.st_mode), "), so toolhost does not trust it: anyone who ",
                                           "can write to it could change what toolhost runs. Fix it with: chmod go-w ",
                                           path));
  }
  if (secret && (st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    return absl::PermissionDeniedError(cat("the ", what, " ", path, " can be read by others (mode ",
                                           mode_text(st.st_mode), "); keep it to yourself with: chmod 600 ", path));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status check_trusted(const std::string& path, std::string_view what) { return check(path, what, false); }

absl::Status check_private(const std::string& path, std::string_view what) { return check(path, what, true); }

}  // namespace toolhost::policy
