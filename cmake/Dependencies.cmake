# SPDX-License-Identifier: Apache-2.0
# Every dependency comes from a Debian 12 package (see scripts/setup.sh).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBFABRIC REQUIRED IMPORTED_TARGET libfabric>=1.17)
# HTTPS for /metrics (daemon/export/http_server): libmicrohttpd over GnuTLS, whose session the
# server asks to verify client certificates (headers only: both are opened at run time, and only
# for HTTPS and certificate checks). 0.9.71 is the first with enum MHD_Result.
pkg_check_modules(MICROHTTPD REQUIRED IMPORTED_TARGET libmicrohttpd>=0.9.71)
pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls)
find_package(Threads REQUIRED)
find_package(absl REQUIRED)
find_package(Protobuf REQUIRED)
find_package(gRPC REQUIRED)
find_package(prometheus-cpp REQUIRED COMPONENTS core pull)
find_package(spdlog REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 REQUIRED)
find_package(CURL REQUIRED)
find_package(ZLIB REQUIRED)
if(EFAWATCH_TESTS)
  find_package(GTest REQUIRED)
endif()
find_program(GRPC_CPP_PLUGIN grpc_cpp_plugin REQUIRED)
find_program(PROTOC protoc REQUIRED)
