// The child toolhost of an isolated group (DESIGN.md): `toolhost --plugin-child=FD`. It loads the
// group's plugins as an in-process server would, sends the parent what they registered, then runs
// the calls the parent sends until the parent stops it or goes away.
#pragma once

namespace toolhost::plugins::isolation {

// The argument the parent starts a child with: "--plugin-child=3".
inline constexpr const char* kChildFlag = "--plugin-child=";

// Serves the parent on descriptor `fd`; returns the process's exit status.
int plugin_child(int fd);

}  // namespace toolhost::plugins::isolation
