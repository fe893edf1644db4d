#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace efawatch::cli {

// `efawatch analyze [--format text|json] FILE...`: feeds each file ("-" = stdin; gzip files are
// decompressed transparently) to one nccl::Analyzer and prints the report to `out`.
// Returns 0 when there is no critical finding, 1 when there is one, 2 on a usage or I/O error
// (one line on `err`).
int RunAnalyze(const std::vector<std::string>& files, const std::string& format, std::ostream& out,
               std::ostream& err);

}  // namespace efawatch::cli
