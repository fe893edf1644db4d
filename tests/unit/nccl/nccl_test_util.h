// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lib/nccl/analyzer.h"

// Helpers shared by the NCCL analyzer tests: locating fixtures and the shared corpus, reading
// files, and re-wrapping their lines as CRI or docker json-file records.
namespace efawatch::nccl::testing {

// kPlain, kCri and kDockerJson are how a container runtime stores a line; the others are
// envelopes consoles and shippers put around it, which must change no verdict (kBom puts a
// byte-order mark before the first line only; kRay is one Ray worker, so one address).
enum class Wrap {
  kPlain,
  kCri,
  kDockerJson,
  kKubectlTimestamps,
  kKubectlPrefix,
  kRay,
  kMpiTag,
  kCrlf,
  kAnsi,
  kCompose,
  kSyslog,
  kStern,
  kPythonLogging,
  kTab,
  kBom,
};

// Every envelope, with a name for test output.
inline std::vector<std::pair<Wrap, const char*>> AllWraps() {
  return {{Wrap::kPlain, "Plain"},
          {Wrap::kCri, "Cri"},
          {Wrap::kDockerJson, "DockerJson"},
          {Wrap::kKubectlTimestamps, "KubectlTimestamps"},
          {Wrap::kKubectlPrefix, "KubectlPrefix"},
          {Wrap::kRay, "Ray"},
          {Wrap::kMpiTag, "MpiTag"},
          {Wrap::kCrlf, "Crlf"},
          {Wrap::kAnsi, "Ansi"},
          {Wrap::kCompose, "Compose"},
          {Wrap::kSyslog, "Syslog"},
          {Wrap::kStern, "Stern"},
          {Wrap::kPythonLogging, "PythonLogging"},
          {Wrap::kTab, "Tab"},
          {Wrap::kBom, "Bom"}};
}

inline std::string SourceDir() {
  const char* d = std::getenv("EFAWATCH_SOURCE_DIR");
  return d != nullptr ? d : ".";
}

inline std::string FixtureDir() { return SourceDir() + "/tests/fixtures/nccl"; }

// The shared corpus lives next to the checkout, never in it.
inline std::string SharedDir() {
  const char* d = std::getenv("EFAWATCH_SHARED_DIR");
  return d != nullptr ? d : SourceDir() + "/../shared";
}

inline std::vector<std::string> ReadLines(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

inline std::string JsonEscape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
  return out;
}

// Re-packages one plain line the way a container runtime stores it.
inline std::vector<std::string> WrapLine(const std::string& line, Wrap wrap, size_t n) {
  std::string ts = "2025-03-04T05:06:07." + std::to_string(100000000 + n) + "Z";
  if (wrap == Wrap::kCri) {
    // Split long lines into a partial and a final record, as containerd does past its limit.
    if (line.size() > 120) {
      return {ts + " stdout P " + line.substr(0, 60), ts + " stdout F " + line.substr(60)};
    }
    return {ts + " stdout F " + line};
  }
  if (wrap == Wrap::kDockerJson) {
    return {"{\"log\":\"" + JsonEscape(line) + "\\n\",\"stream\":\"stdout\",\"time\":\"" + ts +
            "\"}"};
  }
  switch (wrap) {
    case Wrap::kKubectlTimestamps:
      return {ts + " " + line};
    case Wrap::kKubectlPrefix:
      return {"[pod/train-worker-0/ray-worker] " + line};
    case Wrap::kRay:
      return {"(RayTrainWorker pid=4242, ip=10.0.0.5) " + line};
    case Wrap::kMpiTag:
      return {"[1," + std::to_string(n % 2) + "]<stdout>:" + line};
    case Wrap::kCrlf:
      return {line + "\r"};
    case Wrap::kAnsi:
      return {"\x1b[36m" + line + "\x1b[0m"};
    case Wrap::kCompose:
      return {"worker-1  | " + line};
    case Wrap::kSyslog:
      return {"Dec  5 04:00:00 node1 python[123]: " + line};
    case Wrap::kStern:
      return {"train-worker-0 ray-worker " + line};
    case Wrap::kPythonLogging:
      return {"2025-03-04 05:06:07,123 - INFO - " + line};
    case Wrap::kTab:
      return {"\t" + line};
    case Wrap::kBom:
      return {n == 0 ? "\xEF\xBB\xBF" + line : line};
    default:
      return {line};
  }
}

inline Report AnalyzeFile(const std::string& path, Wrap wrap = Wrap::kPlain,
                          Counters* counters = nullptr) {
  Analyzer analyzer;
  uint64_t n = 0;
  for (const std::string& line : ReadLines(path)) {
    for (const std::string& physical : WrapLine(line, wrap, n)) {
      analyzer.Feed(path, ++n, physical);
    }
  }
  if (counters != nullptr) *counters = analyzer.counters();
  return analyzer.Snapshot();
}

// Tab-separated table with a header row -> one map per row.
inline std::vector<std::vector<std::string>> ReadTsv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  for (const std::string& line : ReadLines(path)) {
    if (line.empty()) continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, '\t')) cells.push_back(cell);
    if (!line.empty() && line.back() == '\t') cells.emplace_back();
    rows.push_back(cells);
  }
  return rows;
}

}  // namespace efawatch::nccl::testing
