# toolhost_add_fuzzer(NAME SOURCES... [LIBS libs...]): a libFuzzer target, built only when
# TOOLHOST_FUZZ is on (scripts/test does that in build-fuzz with clang) and run by ctest with
# the label "fuzz" for TOOLHOST_FUZZ_SECONDS seconds. Seeds, if any, live in
# ${CMAKE_CURRENT_SOURCE_DIR}/corpus/NAME.
set(TOOLHOST_FUZZ_SECONDS 20 CACHE STRING "Seconds each fuzzer runs under ctest")
if(TOOLHOST_FUZZ AND NOT TARGET fuzzers)
  add_custom_target(fuzzers)
endif()

function(toolhost_add_fuzzer name)
  if(NOT TOOLHOST_FUZZ)
    return()
  endif()
  cmake_parse_arguments(F "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${F_SOURCES} ${F_UNPARSED_ARGUMENTS})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  if(F_LIBS)
    target_link_libraries(${name} PRIVATE ${F_LIBS})
  endif()
  add_dependencies(fuzzers ${name})
  set(_work ${CMAKE_CURRENT_BINARY_DIR}/${name}-corpus)
  file(MAKE_DIRECTORY ${_work})
  set(_seeds "")
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name})
    set(_seeds ${CMAKE_CURRENT_SOURCE_DIR}/corpus/${name})
  endif()
  add_test(NAME fuzz_${name}
           COMMAND ${name} -max_total_time=${TOOLHOST_FUZZ_SECONDS} -rss_limit_mb=2048
                   -timeout=10 -print_final_stats=1 ${_work} ${_seeds})
  set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzz TIMEOUT 600)
endfunction()
