# SPDX-License-Identifier: Apache-2.0
# toolhost_add_plugin(NAME SOURCES...): one plugin, one shared library in build/plugins.
#
# The library is named NAME.so (no "lib" prefix), built with hidden visibility and a version
# script so that it exports exactly one symbol, toolhost_plugin_entry. It is linked without
# -z defs: its Abseil references resolve against the toolhost executable that loads it
# (ToolhostAbsl.cmake), and toolhost loads plugins with RTLD_NOW, so any other missing symbol
# is a load error that names it (`toolhost plugins` shows it).
set(TOOLHOST_PLUGIN_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/plugin.version CACHE INTERNAL "")

function(toolhost_add_plugin name)
  add_library(${name} MODULE ${ARGN})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${name}
    LIBRARY_OUTPUT_DIRECTORY ${TOOLHOST_PLUGIN_OUTPUT_DIR}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${name} PRIVATE toolhost::sdk)
  target_link_options(${name} PRIVATE -Wl,--version-script=${TOOLHOST_PLUGIN_VERSION_SCRIPT})
  install(TARGETS ${name} LIBRARY DESTINATION ${TOOLHOST_INSTALL_PLUGIN_DIR})
endfunction()
