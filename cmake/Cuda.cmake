# SPDX-License-Identifier: Apache-2.0
# EFAWATCH_CUDA=AUTO|ON|OFF decides whether the NCCL collective probe is built. AUTO builds it
# when both the CUDA toolkit and NCCL are found; ON makes their absence an error; OFF skips the
# search. One status line says what happened, so a CPU-only build is visibly CPU-only.
set(EFAWATCH_HAVE_NCCL OFF)
if(NOT EFAWATCH_CUDA STREQUAL "OFF")
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(CUDAToolkit_FOUND AND NCCL_INCLUDE_DIR AND NCCL_LIBRARY)
    set(EFAWATCH_HAVE_NCCL ON)
    file(STRINGS ${NCCL_INCLUDE_DIR}/nccl.h _nccl_ver REGEX "#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*"
                         "\\1.\\2.\\3" EFAWATCH_NCCL_VERSION "${_nccl_ver}")
    string(REGEX REPLACE "\\..*" "" EFAWATCH_NCCL_MAJOR "${EFAWATCH_NCCL_VERSION}")
  elseif(EFAWATCH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "EFAWATCH_CUDA=ON but CUDA toolkit or NCCL not found")
  endif()
endif()
if(EFAWATCH_HAVE_NCCL)
  message(STATUS "efawatch: NCCL probe: built (CUDA ${CUDAToolkit_VERSION}, NCCL ${EFAWATCH_NCCL_VERSION})")
else()
  set(EFAWATCH_NCCL_VERSION "")
  message(STATUS "efawatch: NCCL probe: NOT built (EFAWATCH_CUDA=${EFAWATCH_CUDA}; CUDA/NCCL not used)")
endif()
