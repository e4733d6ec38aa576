#include "transport_entry.hpp"

#include <cstring>

namespace toolhost::dump_backend {

void write_text(toolhost_writer_t* out, const char* text, size_t size) noexcept {
  if (out != nullptr && out->write != nullptr) out->write(out->ctx, text, size);
}

bool register_debug_target(const toolhost_host_t* host, const toolhost_debug_target_factory_t* factory,
                           toolhost_writer_t* error) noexcept {
  const auto* registry = static_cast<const toolhost_registry_t*>(host->get_service(host, TOOLHOST_REGISTRY_ID));
  if (registry == nullptr || registry->register_transport == nullptr) {
    const char* why = "the host offers no toolhost.registry/1 service to register the debug-target transport with";
    write_text(error, why, std::strlen(why));
    return false;
  }
  const toolhost_transport_desc_t desc{sizeof desc, TOOLHOST_DEBUG_TARGET_KIND, factory->name, factory};
  return registry->register_transport(host, &desc, error) == TOOLHOST_OK;
}

}  // namespace toolhost::dump_backend
