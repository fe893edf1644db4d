# SPDX-License-Identifier: Apache-2.0
# The composition root and the efawatchd executable.
add_library(efawatch_config STATIC ${CMAKE_CURRENT_SOURCE_DIR}/config.cc)
efawatch_warnings(efawatch_config)
efawatch_module(efawatch_config)
target_link_libraries(efawatch_config PUBLIC efawatch_common absl::statusor absl::strings)

add_library(efawatch_app STATIC ${CMAKE_CURRENT_SOURCE_DIR}/app.cc
                                ${CMAKE_CURRENT_SOURCE_DIR}/module_options.cc
                                ${CMAKE_CURRENT_SOURCE_DIR}/logging.cc
                                ${CMAKE_CURRENT_SOURCE_DIR}/port_file.cc
                                ${CMAKE_CURRENT_SOURCE_DIR}/startup_log.cc)
efawatch_warnings(efawatch_app)
efawatch_module(efawatch_app)
target_link_libraries(efawatch_app PUBLIC efawatch_config efawatch_common efawatch_efa
                                          efawatch_export efawatch_tls efawatch_rpc efawatch_agent_ops efawatch_mesh efawatch_version
                                          efawatch_pod_analysis efawatch_inspector_collector efawatch_workloads efawatch_signals
                                          efawatch_state efawatch_self_ping
                                          spdlog::spdlog)

add_executable(efawatchd ${CMAKE_CURRENT_SOURCE_DIR}/main.cc)
efawatch_warnings(efawatchd)
efawatch_module(efawatchd)
target_link_libraries(efawatchd PRIVATE efawatch_app)
