// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/types.h>

#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "lib/doctor/doctor.h"

namespace efawatch::cli {

struct DoctorArgs {
  std::string root;  ///< --root DIR: a mounted image or node filesystem
  pid_t pid = 0;     ///< --pid PID: a running process, seen from the host
  std::string proc = "/proc";
  std::string format = "text";
};

// `efawatch doctor`: runs every check of lib/doctor on this environment, on --root or on --pid,
// prints each with its evidence and fix. Returns 0 (no FAIL), 1 (a FAIL), 2 (could not run: one
// line on `err`). `env` is this process's environment (the settings checked without --pid).
int RunDoctor(const DoctorArgs& args, const std::map<std::string, std::string>& env,
              std::ostream& out, std::ostream& err);

// One titled list of checks, as text (one line each, evidence and fix below), or as a JSON
// object {"target", "checks", "status"} appended to `json_out` when that is given.
void PrintChecks(const std::string& title, const std::vector<doctor::Check>& checks,
                 std::ostream& out);
std::string ChecksJson(const std::string& title, const std::vector<doctor::Check>& checks);

}  // namespace efawatch::cli
