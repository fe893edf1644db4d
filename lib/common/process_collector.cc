// SPDX-License-Identifier: Apache-2.0
#include "lib/common/process_collector.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"

namespace efawatch::common {

absl::Status ProcessCollector::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                       MetricSink& sink) {
  std::ifstream stat(self_dir_ / "stat");
  std::string text;
  if (!std::getline(stat, text)) {
    return absl::UnavailableError(absl::StrCat("cannot read ", (self_dir_ / "stat").string()));
  }
  // The command name (field 2) may contain spaces and parentheses: fields resume after the last
  // ')'. utime and stime are fields 14 and 15 (proc(5)), rss is field 24, in pages.
  auto close = text.rfind(')');
  if (close == std::string::npos) return absl::DataLossError("malformed stat line");
  std::istringstream rest(text.substr(close + 2));
  std::string field;
  double utime = 0, stime = 0, rss_pages = 0;
  for (int i = 3; i <= 24 && rest >> field; ++i) {
    if (i == 14) utime = std::stod(field);
    if (i == 15) stime = std::stod(field);
    if (i == 24) rss_pages = std::stod(field);
  }
  const double ticks = static_cast<double>(sysconf(_SC_CLK_TCK));
  sink.Add(metrics::M::kProcessCpuSecondsTotal, {}, (utime + stime) / ticks);
  sink.Add(metrics::M::kProcessResidentMemoryBytes, {},
           rss_pages * static_cast<double>(sysconf(_SC_PAGESIZE)));
  std::error_code ec;
  double fds = 0;
  for (auto it = std::filesystem::directory_iterator(self_dir_ / "fd", ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++fds;
  }
  if (!ec) sink.Add(metrics::M::kProcessOpenFds, {}, fds);
  return absl::OkStatus();
}

}  // namespace efawatch::common
