# SPDX-License-Identifier: Apache-2.0
# toolhost_add_plugin(NAME [TEST_ONLY] SOURCES...): one plugin, one shared library in build/plugins.
#
# The library is named NAME.so (no "lib" prefix), built with hidden visibility and a version
# script so that it exports exactly one symbol, toolhost_plugin_entry. It is linked without
# -z defs: its Abseil references resolve against the toolhost executable that loads it
# (ToolhostAbsl.cmake), and toolhost loads plugins with RTLD_NOW, so any other missing symbol
# is a load error that names it (`toolhost plugins` shows it).
#
# toolhost refuses a plugin that others may write to, or its folder (host/policy/file_trust.hpp):
# the library and its folder lose group and other write after each link, whatever the umask, so
# a build made under umask 002 or 000 still loads.
#
# TEST_ONLY: a fixture for tests, built into TOOLHOST_TEST_PLUGIN_OUTPUT_DIR (build/test-plugins)
# and never installed, so that neither the default configuration nor an installed tree offers it.
set(TOOLHOST_PLUGIN_VERSION_SCRIPT ${CMAKE_CURRENT_LIST_DIR}/plugin.version CACHE INTERNAL "")

function(toolhost_add_plugin name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "TEST_ONLY" "" "")
  set(output_dir ${TOOLHOST_PLUGIN_OUTPUT_DIR})
  if(arg_TEST_ONLY)
    set(output_dir ${TOOLHOST_TEST_PLUGIN_OUTPUT_DIR})
    file(REMOVE ${TOOLHOST_PLUGIN_OUTPUT_DIR}/${name}.so)  # where builds before TEST_ONLY put it
  endif()
  add_library(${name} MODULE ${arg_UNPARSED_ARGUMENTS})
  set_target_properties(${name} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${name}
    LIBRARY_OUTPUT_DIRECTORY ${output_dir}
    C_VISIBILITY_PRESET hidden
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON)
  target_link_libraries(${name} PRIVATE toolhost::sdk)
  target_link_options(${name} PRIVATE -Wl,--version-script=${TOOLHOST_PLUGIN_VERSION_SCRIPT})
  add_custom_command(TARGET ${name} POST_BUILD
    COMMAND chmod go-w $<TARGET_FILE:${name}> $<TARGET_FILE_DIR:${name}>
    VERBATIM)
  if(NOT arg_TEST_ONLY)
    install(TARGETS ${name} LIBRARY DESTINATION ${TOOLHOST_INSTALL_PLUGIN_DIR})
    set_property(GLOBAL APPEND PROPERTY TOOLHOST_PLUGINS ${name})
  endif()
endfunction()
