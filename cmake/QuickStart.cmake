# SPDX-License-Identifier: Apache-2.0
# A program that starts in a millisecond or two: `efawatch` links Abseil and the C++ runtime into
# its own binary instead of loading ~35 shared libraries and resolving their symbols at every
# start. The dynamic loader took 1.8 ms of each `efawatch analyze` (3.9 ms on a 1 kB log against
# grep's 1.9 ms; 2.1 ms linked this way), 3-4 % of the 2 %-NCCL shapes' time in bench/analyze.sh
# (#45). Only for a program that loads no other C++ library: gRPC's shared libraries bring their
# own Abseil, and two copies of it in one process would each keep their own state, so the agent
# and efawatch-rpc stay as they are. Left out under the sanitizers, whose runtimes expect the
# shared C++ runtime, and where Debian's static Abseil archives are missing (a build then links
# the shared ones, as before, and says so).

# Appends to `out_var` the absl:: targets `item` links, directly or through our own targets.
function(_efawatch_absl_closure item out_var)
  get_property(seen GLOBAL PROPERTY _EFAWATCH_ABSL_SEEN)
  if(item IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _EFAWATCH_ABSL_SEEN ${item})
  set(found ${${out_var}})
  if(item MATCHES "^absl::")
    list(APPEND found ${item})
  endif()
  set(links "")
  get_target_property(imported ${item} IMPORTED)
  get_target_property(type ${item} TYPE)
  if(NOT imported AND NOT type STREQUAL "INTERFACE_LIBRARY")
    get_target_property(direct ${item} LINK_LIBRARIES)
    if(direct)
      list(APPEND links ${direct})
    endif()
  endif()
  get_target_property(iface ${item} INTERFACE_LINK_LIBRARIES)
  if(iface)
    list(APPEND links ${iface})
  endif()
  foreach(link IN LISTS links)
    # A static library's private links are listed as $<LINK_ONLY:...>; other generator
    # expressions name no target.
    string(REGEX REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1" link "${link}")
    if(TARGET "${link}")
      _efawatch_absl_closure(${link} found)
    endif()
  endforeach()
  list(REMOVE_DUPLICATES found)
  set(${out_var} ${found} PARENT_SCOPE)
endfunction()

# The static archive beside an imported absl:: shared library, or "" where it has none.
function(_efawatch_absl_archive target out_var)
  set(${out_var} "" PARENT_SCOPE)
  get_target_property(type ${target} TYPE)
  if(NOT type STREQUAL "SHARED_LIBRARY")
    return()
  endif()
  get_target_property(configs ${target} IMPORTED_CONFIGURATIONS)
  set(location "")
  foreach(config IN LISTS configs)
    get_target_property(location ${target} IMPORTED_LOCATION_${config})
    if(location)
      break()
    endif()
  endforeach()
  if(NOT location)
    get_target_property(location ${target} IMPORTED_LOCATION)
  endif()
  if(NOT location)
    return()
  endif()
  get_filename_component(dir "${location}" DIRECTORY)
  get_filename_component(name "${location}" NAME)
  string(REGEX REPLACE "\\.so(\\..*)?$" ".a" archive_name "${name}")
  set(${out_var} "${dir}/${archive_name}" PARENT_SCOPE)
endfunction()

# Links `target` (an executable) with static Abseil and C++ runtime, as the header explains.
function(efawatch_quick_start target)
  if(EFAWATCH_SANITIZE OR EFAWATCH_FUZZ)
    return()
  endif()
  set_property(GLOBAL PROPERTY _EFAWATCH_ABSL_SEEN "")
  set(absl_targets "")
  _efawatch_absl_closure(${target} absl_targets)
  set(archives "")
  foreach(absl_target IN LISTS absl_targets)
    get_target_property(type ${absl_target} TYPE)
    if(NOT type STREQUAL "SHARED_LIBRARY")
      continue()  # header-only
    endif()
    _efawatch_absl_archive(${absl_target} archive)
    if(NOT archive OR NOT EXISTS "${archive}")
      message(STATUS "${target}: no static archive for ${absl_target}; links shared Abseil")
      return()
    endif()
    list(APPEND archives "${archive}")
  endforeach()
  list(JOIN archives " " archive_list)
  # The archives come before the objects, whole (the linker's --gc-sections drops what nothing
  # calls), so every Abseil symbol is defined before the shared libraries are reached, and
  # --as-needed leaves those out of the program's dependencies.
  target_link_options(
    ${target} PRIVATE -static-libstdc++ -static-libgcc
    "SHELL:-Wl,--as-needed -Wl,--whole-archive ${archive_list} -Wl,--no-whole-archive")
endfunction()
