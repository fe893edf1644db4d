// SPDX-License-Identifier: Apache-2.0
#include "lib/doctor/process_log.h"

#include <sys/stat.h>

#include <fstream>
#include <iterator>
#include <sstream>

namespace efawatch::doctor {
namespace fs = std::filesystem;
namespace {

std::string FirstLine(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

// The process's pid in its own namespace: the last NSpid field of its status (a containerised
// process's NCCL writes that number for %p).
std::string OwnPid(const fs::path& proc_dir) {
  std::ifstream in(proc_dir / "status");
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("NSpid:")) continue;
    const size_t last = line.find_last_of(" \t");
    if (last != std::string::npos) return line.substr(last + 1);
  }
  return proc_dir.filename().string();
}

std::string Head(const fs::path& path, size_t max_bytes) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return {};
  std::ifstream in(path, std::ios::binary);
  std::string out(max_bytes, '\0');
  in.read(out.data(), static_cast<std::streamsize>(max_bytes));
  out.resize(static_cast<size_t>(in.gcount()));
  return out;
}

}  // namespace

ProcessLog ReadProcessLog(const fs::path& proc_dir, const std::string& debug_file,
                          size_t max_bytes) {
  ProcessLog log;
  if (!debug_file.empty()) {
    // NCCL expands %h to the host name and %p to the pid (src/debug.cc), both as the process
    // sees them: its UTS host name is its /etc/hostname in a pod, its pid the namespace's.
    std::string name;
    for (size_t i = 0; i < debug_file.size(); ++i) {
      if (debug_file[i] == '%' && i + 1 < debug_file.size()) {
        const char c = debug_file[++i];
        if (c == 'h') {
          name += FirstLine(proc_dir / "root/etc/hostname");
        } else if (c == 'p') {
          name += OwnPid(proc_dir);
        } else {
          name += debug_file.substr(i - 1, 2);
        }
      } else {
        name += debug_file[i];
      }
    }
    fs::path in_process = name;
    if (in_process.is_relative()) {
      std::error_code ec;
      in_process = fs::read_symlink(proc_dir / "cwd", ec) / in_process;
    }
    log.head = Head(proc_dir / "root" / in_process.relative_path(), max_bytes);
    if (!log.head.empty()) {
      log.path = in_process.string();
      return log;
    }
  }
  for (const char* fd : {"1", "2"}) {
    log.head = Head(proc_dir / "fd" / fd, max_bytes);
    if (!log.head.empty()) {
      std::error_code ec;
      log.path = fs::read_symlink(proc_dir / "fd" / fd, ec).string();
      return log;
    }
  }
  return log;
}

}  // namespace efawatch::doctor
