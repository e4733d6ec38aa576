# toolhost::absl: Abseil for everything in this build, linked once, into the executable.
#
# Why: Debian's shared Abseil is a chain of ~30 small libraries (absl_status alone pulls in
# cord, cordz, synchronization, time, symbolize...). Mapping and relocating them cost every
# start ~2.5 ms, half the time from spawn to the initialize reply (bench/mcp). Debian also
# ships the archives, but built without -fPIC (local-exec TLS), so they can go into an
# executable and never into a plugin.
#
# So an executable that links toolhost::absl gets the archives whole and exports Abseil's
# symbols (absl.dynlist); a plugin or any other shared library gets nothing and resolves its
# Abseil references against the executable that loads it. Plugins therefore link without
# -z defs (ToolhostPlugin.cmake); the loader's RTLD_NOW still turns a missing symbol into a
# load error that names it. An out-of-tree plugin works the same way, and one that links
# Debian's shared Abseil as well also works: the executable's copy comes first in the lookup.
#
# Without the archives (another distribution), everything links the shared libraries as before.

set(_toolhost_absl_used absl::status absl::statusor absl::strings absl::str_format absl::cord)

# Every absl:: target `target` depends on, itself included, into `out_var`.
function(_toolhost_absl_closure target out_var)
  set(seen ${${out_var}})
  if(target IN_LIST seen OR NOT TARGET ${target})
    return()
  endif()
  list(APPEND seen ${target})
  get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
  foreach(dep IN LISTS deps)
    if(dep MATCHES "^absl::")
      _toolhost_absl_closure(${dep} seen)
    endif()
  endforeach()
  set(${out_var} ${seen} PARENT_SCOPE)
endfunction()

set(_toolhost_absl_targets "")
foreach(t IN LISTS _toolhost_absl_used)
  _toolhost_absl_closure(${t} _toolhost_absl_targets)
endforeach()

# The archive beside each shared library.
set(TOOLHOST_ABSL_ARCHIVES "")
set(_toolhost_absl_missing "")
foreach(t IN LISTS _toolhost_absl_targets)
  get_target_property(type ${t} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    continue()  # header-only
  endif()
  get_target_property(location ${t} IMPORTED_LOCATION)
  get_target_property(configs ${t} IMPORTED_CONFIGURATIONS)
  if(configs)
    list(GET configs 0 config)
    get_target_property(location ${t} IMPORTED_LOCATION_${config})
  endif()
  string(REGEX REPLACE "\\.so(\\.[0-9]+)*$" ".a" archive "${location}")
  if(EXISTS "${archive}")
    list(APPEND TOOLHOST_ABSL_ARCHIVES "${archive}")
  else()
    list(APPEND _toolhost_absl_missing "${archive}")
  endif()
endforeach()

add_library(toolhost_absl INTERFACE)
add_library(toolhost::absl ALIAS toolhost_absl)
set(_is_executable "$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>")
if(TOOLHOST_ABSL_ARCHIVES AND NOT _toolhost_absl_missing)
  target_link_libraries(toolhost_absl INTERFACE
    "$<${_is_executable}:$<LINK_LIBRARY:WHOLE_ARCHIVE,${TOOLHOST_ABSL_ARCHIVES}>>")
  target_link_options(toolhost_absl INTERFACE
    "$<${_is_executable}:LINKER:--dynamic-list=${CMAKE_CURRENT_LIST_DIR}/absl.dynlist>")
else()
  message(STATUS "Abseil archives not found (${_toolhost_absl_missing}); linking the shared libraries")
  target_link_libraries(toolhost_absl INTERFACE ${_toolhost_absl_used})
endif()
