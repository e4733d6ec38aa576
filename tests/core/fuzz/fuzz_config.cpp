// libFuzzer over the configuration reader: any bytes as a toolhost.toml, alone and as an overlay
// over a valid file, must give a config or an error, never a crash (a key of 50,000 dotted parts
// once overflowed toml++'s stack).
#include <cstddef>
#include <cstdint>
#include <string>

#include "host/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)toolhost::config::parse(text, "fuzz.toml", "/opt/toolhost/bin");
  (void)toolhost::config::parse_layers(
      {{"base.toml", "plugin_dirs = [\"p\"]\n[servers.s]\nplugins = [\"a\"]\n[servers.s.settings.a]\nx = 1\n"},
       {"overlay.toml", text}},
      "/opt/toolhost/bin");
  return 0;
}
