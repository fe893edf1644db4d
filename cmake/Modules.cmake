# SPDX-License-Identifier: Apache-2.0
# The tier rule, enforced by the compiler: there is no include path common to every target.
# Each library target exports its own folder (efawatch_module), through a link under
# <build>/modules/<target>/ that gives its headers their usual names ("lib/nccl/verdict.h"), so a
# file sees only the headers of the targets it links, and those targets link only their tier and
# below (lib <- probes <- daemon, cli). An include of a higher tier, or of a module the target
# does not link, fails to compile. tests/unit/tiers checks the same rule by reading the sources.

# efawatch_module(<target> [DIR <folder relative to the source root>])
# DIR defaults to the folder of the calling CMakeLists.txt.
function(efawatch_module target)
  cmake_parse_arguments(M "" "DIR" "" ${ARGN})
  if(NOT M_DIR)
    file(RELATIVE_PATH M_DIR ${CMAKE_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  endif()
  set(root ${CMAKE_BINARY_DIR}/modules/${target})
  get_filename_component(parent ${root}/${M_DIR} DIRECTORY)
  file(MAKE_DIRECTORY ${parent})
  if(NOT EXISTS ${root}/${M_DIR})
    file(CREATE_LINK ${CMAKE_SOURCE_DIR}/${M_DIR} ${root}/${M_DIR} SYMBOLIC)
  endif()
  get_target_property(type ${target} TYPE)
  if(type STREQUAL "INTERFACE_LIBRARY")
    target_include_directories(${target} INTERFACE ${root})
  elseif(type STREQUAL "EXECUTABLE")
    target_include_directories(${target} PRIVATE ${root})
  else()
    target_include_directories(${target} PUBLIC ${root})
  endif()
endfunction()
