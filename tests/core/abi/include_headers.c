/* Compiled as C11, C++17 and C++20 with -Wall -Wextra -pedantic -Werror by the test suite: the
 * ABI headers must be usable from every language a plugin author might pick. */
#include <toolhost/debug_target.h>
#include <toolhost/plugin.h>

int toolhost_headers_compile(void) {
  toolhost_plugin_entry_t entry = {
      TOOLHOST_ABI_MAJOR, TOOLHOST_ABI_MINOR, sizeof(toolhost_plugin_entry_t), "x", "1", "d", 0, 0};
  toolhost_dt_stop_t stop;
  stop.struct_size = sizeof stop;
  return (int)entry.struct_size + (int)stop.struct_size;
}
