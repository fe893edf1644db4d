// SPDX-License-Identifier: Apache-2.0
// split_by_host: cuts an NCCL log into one file per host, the share each node's agent sees.
//   split_by_host <log> <out-dir>
// Writes <out-dir>/<host>.log for every host name of the log's NCCL records and prints their
// names; lines that name no host go to every piece (split_by_host.h). Exit 2 on a usage or I/O
// error.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "tests/unit/nccl/nccl_test_util.h"
#include "tests/unit/nccl/split_by_host.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: split_by_host <log> <out-dir>\n";
    return 2;
  }
  if (!std::filesystem::exists(argv[1])) {
    std::cerr << "split_by_host: " << argv[1] << ": no such file\n";
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(argv[2], ec);
  if (ec) {
    std::cerr << "split_by_host: " << argv[2] << ": " << ec.message() << "\n";
    return 2;
  }
  auto pieces = efawatch::nccl::testing::SplitByHost(efawatch::nccl::testing::ReadLines(argv[1]));
  for (const auto& [host, lines] : pieces) {
    std::string name = host;
    for (char& c : name) {
      if (c == '/' || c == '\0') c = '_';
    }
    std::filesystem::path out = std::filesystem::path(argv[2]) / (name + ".log");
    std::ofstream f(out, std::ios::binary);
    for (const std::string& l : lines) f << l << "\n";
    if (!f) {
      std::cerr << "split_by_host: cannot write " << out << "\n";
      return 2;
    }
    std::cout << out.string() << "\n";
  }
  return 0;
}
