// SPDX-License-Identifier: Apache-2.0
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "lib/doctor/doctor.h"
#include "lib/doctor/process_log.h"

namespace efawatch::doctor {

std::string_view StatusName(Status s) {
  switch (s) {
    case Status::kPass:
      return "PASS";
    case Status::kWarn:
      return "WARN";
    case Status::kFail:
      return "FAIL";
    case Status::kSkip:
      return "SKIP";
  }
  return "SKIP";
}

Status Worst(const std::vector<Check>& checks) {
  Status worst = Status::kPass;
  for (const Check& c : checks) {
    if (c.status == Status::kFail) return Status::kFail;
    if (c.status == Status::kWarn) worst = Status::kWarn;
  }
  return worst;
}

Target SelfTarget(const std::map<std::string, std::string>& env) {
  Target t;
  t.env = env;
  return t;
}

Target RootTarget(const std::filesystem::path& root,
                  const std::map<std::string, std::string>& env) {
  Target t;
  t.root = root;
  t.host_proc = "";
  t.env = env;
  t.live = false;
  return t;
}

absl::StatusOr<Target> ProcessTarget(const std::filesystem::path& proc, pid_t pid) {
  Target t;
  t.host_proc = proc;
  t.proc_dir = proc / std::to_string(pid);
  t.root = t.proc_dir / "root";
  std::ifstream environ(t.proc_dir / "environ", std::ios::binary);
  if (!environ) {
    return absl::NotFoundError(
        absl::StrCat("cannot read ", (t.proc_dir / "environ").string(),
                     ": no such process, or not allowed (run as root, with hostPID for a pod)"));
  }
  const std::string all((std::istreambuf_iterator<char>(environ)), {});
  std::istringstream vars(all);
  for (std::string kv; std::getline(vars, kv, '\0');) {
    const size_t eq = kv.find('=');
    if (eq != std::string::npos) t.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  // "7f..-7f.. r-xp 00000000 08:01 1234  /usr/lib/x86_64-linux-gnu/libfabric.so.1.20.0"
  std::ifstream maps(t.proc_dir / "maps");
  std::set<std::string> seen;
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos) continue;
    std::string path = line.substr(slash);
    if (path.find(".so") != std::string::npos && seen.insert(path).second) {
      t.mapped.push_back(path);
    }
  }
  const auto debug_file = t.env.find("NCCL_DEBUG_FILE");
  ProcessLog log =
      ReadProcessLog(t.proc_dir, debug_file == t.env.end() ? std::string() : debug_file->second);
  t.log_path = std::move(log.path);
  t.log_head = std::move(log.head);
  return t;
}

}  // namespace efawatch::doctor
