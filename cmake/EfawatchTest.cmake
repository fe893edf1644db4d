# SPDX-License-Identifier: Apache-2.0
# efawatch_add_test(NAME <name> SOURCES <...> LIBS <...> LABELS <...> [TIMEOUT <s>])
# Builds a GoogleTest binary and registers it as one ctest entry with a label and a timeout, so a
# hang fails the run instead of stalling CI.
function(efawatch_add_test)
  cmake_parse_arguments(T "PRIVATE_SHM" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 60)
  endif()
  # ThreadSanitizer runs code 5 to 15 times slower: a hang still fails, a slow run does not.
  if(EFAWATCH_SANITIZE MATCHES "thread")
    math(EXPR T_TIMEOUT "${T_TIMEOUT} * 5")
  endif()
  add_executable(${T_NAME} ${T_SOURCES})
  efawatch_warnings(${T_NAME})
  efawatch_module(${T_NAME} DIR tests)
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main GTest::gmock)
  set_target_properties(${T_NAME} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests)
  # PRIVATE_SHM: tests that open libfabric's shm provider get a /dev/shm of their own.
  if(T_PRIVATE_SHM)
    add_test(NAME ${T_NAME}
      COMMAND ${CMAKE_SOURCE_DIR}/tests/support/private-shm.sh $<TARGET_FILE:${T_NAME}>)
  else()
    add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  endif()
  # tests_<label> builds every test of a label, e.g. the ASan run builds tests_unit only.
  foreach(label ${T_LABELS})
    if(NOT TARGET tests_${label})
      add_custom_target(tests_${label})
    endif()
    add_dependencies(tests_${label} ${T_NAME})
  endforeach()
  set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}" TIMEOUT ${T_TIMEOUT}
    ENVIRONMENT "EFAWATCH_SOURCE_DIR=${CMAKE_SOURCE_DIR};EFAWATCH_BINARY_DIR=${CMAKE_BINARY_DIR}")
endfunction()

# efawatch_add_fuzz_target(<name> LIBS <...>)
# A libFuzzer target from <name>.cc in the calling directory, built into <build>/fuzz where
# tests/fuzz/run.sh finds it. Only with -DEFAWATCH_FUZZ=ON (clang); nothing otherwise.
function(efawatch_add_fuzz_target name)
  cmake_parse_arguments(F "" "" "LIBS" ${ARGN})
  if(NOT EFAWATCH_FUZZ)
    return()
  endif()
  add_executable(${name} ${name}.cc)
  efawatch_module(${name} DIR tests)
  efawatch_warnings(${name})
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer)
  target_link_libraries(${name} PRIVATE ${F_LIBS})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/fuzz)
endfunction()
