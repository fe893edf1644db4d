// SPDX-License-Identifier: Apache-2.0
#include "cli/inspector_table.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "lib/common/instance_types.h"
#include "lib/inspector/record.h"
#include "lib/inspector/stats.h"

namespace efawatch::cli {
namespace {

using inspector::InspectorOp;
using inspector::LineKind;
using inspector::OpKey;

// Samples kept per (collective, size) for the percentiles: past this, every other one is
// dropped (stride doubles), so a file of a billion ops stays within memory.
constexpr size_t kMaxSamples = 1 << 20;

struct Row {
  uint64_t count = 0;
  std::vector<double> busbw_gbs;
  size_t stride = 1;
  std::set<std::string> comms;
};

struct Totals {
  // intervals: Prometheus-mode samples of NCCL >= 2.30, each a dump interval's geometric mean
  // (a row's count then counts intervals: the plugin writes no op count).
  uint64_t ops = 0, intervals = 0, other_version = 0, malformed = 0;
  std::set<std::string> comms;
  std::map<OpKey, Row> rows;

  void Add(const InspectorOp& op) {
    Row& r = rows[OpKey{op.op, inspector::SizeBucket(op.msg_size_bytes)}];
    if (r.count++ % r.stride == 0) r.busbw_gbs.push_back(op.busbw_gbs);
    if (r.busbw_gbs.size() >= kMaxSamples) {
      std::vector<double> half;
      for (size_t i = 0; i < r.busbw_gbs.size(); i += 2) half.push_back(r.busbw_gbs[i]);
      r.busbw_gbs = std::move(half);
      r.stride *= 2;
    }
    r.comms.insert(inspector::CommKey(op));
    comms.insert(inspector::CommKey(op));
  }
};

// Nearest-rank percentile of sorted `v` (p in 0..100).
double Percentile(const std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t rank = static_cast<size_t>(p / 100 * static_cast<double>(v.size()) + 0.999999);
  return v[std::clamp<size_t>(rank, 1, v.size()) - 1];
}

bool ReadFile(const std::string& path, Totals& t) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  if (path.ends_with(".prom")) {
    std::stringstream ss;
    ss << in.rdbuf();
    const inspector::PromFile f = inspector::ParsePromText(ss.str());
    t.malformed += f.malformed;
    for (const InspectorOp& op : f.ops) {
      ++(op.aggregated ? t.intervals : t.ops);
      t.Add(op);
    }
    return true;
  }
  std::string line;
  InspectorOp op;
  while (std::getline(in, line)) {
    switch (inspector::ParseJsonLine(line, &op)) {
      case LineKind::kBlank:
        continue;
      case LineKind::kMalformed:
        ++t.malformed;
        continue;
      case LineKind::kOpOtherVersion:
        ++t.other_version;
        break;
      case LineKind::kOp:
        ++t.ops;
        break;
    }
    t.Add(op);
  }
  return !in.bad();
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

}  // namespace

bool IsInspectorFile(const std::string& path) {
  if (path == "-") return false;
  const std::string name = path.substr(path.rfind('/') + 1);
  if (name.starts_with("nccl_inspector_metrics_") && name.ends_with(".prom")) return true;
  std::ifstream in(path, std::ios::binary);
  std::string first(64 << 10, '\0');
  in.read(first.data(), static_cast<std::streamsize>(first.size()));
  first.resize(static_cast<size_t>(in.gcount()));
  return inspector::LooksLikeInspectorJson(first.substr(0, first.find('\n')));
}

int RunInspectorTable(const std::vector<std::string>& files, const std::string& format,
                      const std::string& instance_type, std::ostream& out, std::ostream& err) {
  Totals t;
  for (const std::string& f : files) {
    if (!ReadFile(f, t)) {
      err << "efawatch analyze: cannot read " << f << "\n";
      return 2;
    }
  }
  const double expected = common::ExpectedNetworkBytesPerSecond(instance_type) / 1e9;
  if (!instance_type.empty() && expected == 0) {
    err << "efawatch analyze: no expected bandwidth known for instance type " << instance_type
        << "\n";
  }
  for (auto& [key, row] : t.rows) std::sort(row.busbw_gbs.begin(), row.busbw_gbs.end());
  if (format == "json") {
    out << "{\"inspector\": {\"ops\": " << t.ops << ", \"interval_samples\": " << t.intervals
        << ", \"other_version\": " << t.other_version << ", \"malformed\": " << t.malformed
        << ", \"communicators\": " << t.comms.size() << ", \"expected_gbs\": " << Fixed(expected, 3)
        << ", \"rows\": [";
    bool first = true;
    for (const auto& [key, row] : t.rows) {
      out << (first ? "" : ", ") << "{\"collective\": \"" << key.op << "\", \"size_bucket\": \""
          << inspector::SizeBucketLabel(key.size_bucket) << "\", \"count\": " << row.count
          << ", \"communicators\": " << row.comms.size()
          << ", \"busbw_p50_gbs\": " << Fixed(Percentile(row.busbw_gbs, 50), 3)
          << ", \"busbw_p10_gbs\": " << Fixed(Percentile(row.busbw_gbs, 10), 3) << "}";
      first = false;
    }
    out << "]}}\n";
    return 0;
  }
  out << "# NCCL Inspector: " << t.ops << " op(s)";
  if (t.intervals > 0) {
    out << ", " << t.intervals
        << " interval sample(s) (Prometheus mode, NCCL >= 2.30: each the geometric mean of an "
           "interval's ops; counts are intervals)";
  }
  if (t.other_version > 0) out << " (+" << t.other_version << " of another format version)";
  out << " from " << files.size() << " file(s), " << t.comms.size() << " communicator(s)";
  if (t.malformed > 0) out << "; " << t.malformed << " malformed record(s) skipped";
  out << "\n";
  if (expected > 0) {
    out << "# expected: " << Fixed(expected, 1) << " GB/s (" << instance_type
        << "'s network); large messages (64MiB and more) should come near it\n";
  }
  char line[160];
  std::snprintf(line, sizeof(line), "#%14s %8s %10s %6s %12s %12s%s\n", "collective", "size",
                "count", "comms", "busbw p50", "busbw p10", expected > 0 ? "  p50/expected" : "");
  out << line;
  std::snprintf(line, sizeof(line), "#%14s %8s %10s %6s %12s %12s%s\n", "", "", "", "", "(GB/s)",
                "(GB/s)", expected > 0 ? "" : "");
  out << line;
  for (const auto& [key, row] : t.rows) {
    const double p50 = Percentile(row.busbw_gbs, 50);
    std::string share;
    if (expected > 0) {
      share = "  " + Fixed(100 * p50 / expected, 1) + "%";
      if (key.size_bucket < inspector::kFirstLargeBucket) share += " (small)";
    }
    std::snprintf(line, sizeof(line), " %14s %8s %10llu %6zu %12.2f %12.2f%s\n", key.op.c_str(),
                  std::string(inspector::SizeBucketLabel(key.size_bucket)).c_str(),
                  static_cast<unsigned long long>(row.count), row.comms.size(), p50,
                  Percentile(row.busbw_gbs, 10), share.c_str());
    out << line;
  }
  return 0;
}

}  // namespace efawatch::cli
