// SPDX-License-Identifier: Apache-2.0
#include "cli/doctor.h"

#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>

#include "lib/doctor/doctor.h"

namespace efawatch::cli {
namespace {

std::string Describe(const DoctorArgs& a) {
  if (a.pid != 0) return "process " + std::to_string(a.pid);
  if (!a.root.empty()) return "root " + a.root;
  return "this environment";
}

}  // namespace

void PrintChecks(const std::string& target, const std::vector<doctor::Check>& checks,
                 std::ostream& out) {
  out << "efawatch doctor: " << target << "\n";
  std::map<doctor::Status, int> counts;
  for (const doctor::Check& c : checks) {
    ++counts[c.status];
    out << doctor::StatusName(c.status) << "  " << std::left << std::setw(32) << c.id << " "
        << c.summary << "\n";
    if (!c.evidence.empty()) out << "      evidence: " << c.evidence << "\n";
    if (!c.fix.empty()) out << "      fix: " << c.fix << "\n";
  }
  out << "summary: " << counts[doctor::Status::kPass] << " PASS, " << counts[doctor::Status::kWarn]
      << " WARN, " << counts[doctor::Status::kFail] << " FAIL, " << counts[doctor::Status::kSkip]
      << " SKIP\n";
}

std::string ChecksJson(const std::string& target, const std::vector<doctor::Check>& checks) {
  nlohmann::json j = {{"target", target}, {"checks", nlohmann::json::array()}};
  for (const doctor::Check& c : checks) {
    j["checks"].push_back({{"id", c.id},
                           {"status", doctor::StatusName(c.status)},
                           {"summary", c.summary},
                           {"evidence", c.evidence},
                           {"fix", c.fix}});
  }
  j["status"] = doctor::StatusName(doctor::Worst(checks));
  return j.dump(2);
}

int RunDoctor(const DoctorArgs& args, const std::map<std::string, std::string>& env,
              std::ostream& out, std::ostream& err) {
  if (args.pid != 0 && !args.root.empty()) {
    err << "efawatch doctor: --pid and --root exclude each other\n";
    return 2;
  }
  doctor::Target target;
  if (args.pid != 0) {
    auto t = doctor::ProcessTarget(args.proc, args.pid);
    if (!t.ok()) {
      err << "efawatch doctor: " << t.status().message() << "\n";
      return 2;
    }
    target = *std::move(t);
  } else if (!args.root.empty()) {
    target = doctor::RootTarget(args.root, env);
  } else {
    target = doctor::SelfTarget(env);
  }
  const std::vector<doctor::Check> checks = doctor::RunChecks(target);
  if (args.format == "json") {
    out << ChecksJson(Describe(args), checks) << "\n";
  } else {
    PrintChecks(Describe(args), checks, out);
  }
  return doctor::Worst(checks) == doctor::Status::kFail ? 1 : 0;
}

}  // namespace efawatch::cli
