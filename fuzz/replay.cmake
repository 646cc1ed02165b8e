# Included from tests/CMakeLists.txt: every fuzz target, built without libFuzzer around a small
# replay main, runs its seed corpus (fuzz/corpus/<target>) and every reproducer of a past finding
# (fuzz/regressions/<target>) as a ctest, in the normal build and in the sanitizer builds.
include(${CMAKE_SOURCE_DIR}/fuzz/targets.cmake)
foreach(entry ${VERBATIM_FUZZ_TARGETS})
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 name)
  list(GET parts 1 lib)
  string(REPLACE "fuzz_" "replay_" exe ${name})
  add_executable(${exe} ${CMAKE_SOURCE_DIR}/fuzz/${name}.cpp ${CMAKE_SOURCE_DIR}/fuzz/replay_main.cpp
                        ${VERBATIM_FUZZ_EXTRA_SOURCES_${name}})
  target_include_directories(${exe} PRIVATE ${CMAKE_SOURCE_DIR}/fuzz)
  target_link_libraries(${exe} PRIVATE ${lib})
  if(VERBATIM_SANITIZE MATCHES "undefined")
    # GCC leaves float->int overflow out of -fsanitize=undefined; clang's fuzz build has it.
    target_compile_options(${exe} PRIVATE -fsanitize=float-cast-overflow)
    target_link_options(${exe} PRIVATE -fsanitize=float-cast-overflow)
  endif()
  set(inputs ${CMAKE_SOURCE_DIR}/fuzz/corpus/${name})
  if(EXISTS ${CMAKE_SOURCE_DIR}/fuzz/regressions/${name})
    list(APPEND inputs ${CMAKE_SOURCE_DIR}/fuzz/regressions/${name})
  endif()
  add_test(NAME ${exe} COMMAND ${exe} ${inputs})
  set_tests_properties(${exe} PROPERTIES TIMEOUT 300 LABELS "fuzz_replay")
endforeach()
