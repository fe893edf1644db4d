# SPDX-License-Identifier: Apache-2.0
# Warning flags for our own targets only (generated protobuf code is compiled without -Werror).
set(EFAWATCH_WARNINGS -Wall -Wextra -Wpedantic -Wnon-virtual-dtor)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  list(APPEND EFAWATCH_WARNINGS -Wshadow=local)  # clang spells it differently
endif()
if(EFAWATCH_WERROR)
  list(APPEND EFAWATCH_WARNINGS -Werror)
endif()

if(EFAWATCH_SANITIZE)
  set(_san "-fsanitize=${EFAWATCH_SANITIZE}")
  add_compile_options(${_san} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(${_san})
endif()

# Applies our warnings to a target we own.
function(efawatch_warnings target)
  target_compile_options(${target} PRIVATE ${EFAWATCH_WARNINGS})
endfunction()
