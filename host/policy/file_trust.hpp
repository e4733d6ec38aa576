// Whether toolhost may trust a file it runs code from or takes settings from, by the rule ssh
// applies to its keys and configs: the file (and a plugin's folder) must belong to the user
// running toolhost or to root, and no one else may write to it. Otherwise another local user
// could put their code into a host that may run as root.
#pragma once

#include <string>
#include <string_view>

#include <absl/status/status.h>

namespace toolhost::policy {

// What is being checked, for the sentence: "plugin", "plugin folder", "configuration"...
// OK when `path` is trusted or does not exist (whoever reads it says so); otherwise an error
// whose message names the path, the owner or mode at fault, and the command that fixes it.
// Group write is accepted when the group is the owner's own private group (Debian's umask 002
// for user private groups), as nobody else is in it.
absl::Status check_trusted(const std::string& path, std::string_view what);

// Also refuses a file that others may read: for secrets such as --token-file.
absl::Status check_private(const std::string& path, std::string_view what);

}  // namespace toolhost::policy
