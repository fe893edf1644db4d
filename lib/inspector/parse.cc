// SPDX-License-Identifier: Apache-2.0
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <utility>

#include "lib/common/number.h"
#include "lib/inspector/record.h"
#include "lib/nccl/labels.h"
#include "nlohmann/json.hpp"

namespace efawatch::inspector {
namespace {

using Json = nlohmann::json;

const Json* Member(const Json& j, const char* name) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(name);
  return it == j.end() ? nullptr : &*it;
}

std::string String(const Json& j, const char* name) {
  const Json* v = Member(j, name);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

// A number, or -1 when absent or not a finite number: the Inspector writes every field it
// knows; a missing one is a record of another version, read as far as it goes.
double Number(const Json& j, const char* name) {
  const Json* v = Member(j, name);
  if (v == nullptr || !v->is_number()) return -1;
  const double d = v->get<double>();
  return std::isfinite(d) ? d : -1;
}

int Int(const Json& j, const char* name) {
  return static_cast<int>(common::CheckedInt(Number(j, name), 0, 1'000'000'000).value_or(-1));
}

// A non-negative 64-bit field (a pid, a sequence number, a time stamp): -1 when absent, negative,
// or beyond what any real value reaches (2^53, past which a double no longer holds an integer).
int64_t Int64(const Json& j, const char* name) {
  return common::CheckedInt(Number(j, name), 0, int64_t{1} << 53).value_or(-1);
}

// Comm ids are NCCL's commId ("0x7f8c496ae9f661"), lower case as NCCL prints it in its log, so
// the two meet on one label value; "" for anything the log side would not join on either
// (nccl::CommIdLabelOk).
std::string NormalizeCommId(std::string id) {
  if (!nccl::CommIdLabelOk(id)) return {};
  for (char& c : id) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return id;
}

std::string CommId(const Json& header) { return NormalizeCommId(String(header, "id")); }

bool ReadPerf(const Json& perf, const char* prefix, InspectorOp* out) {
  const std::string p = prefix;
  out->op = String(perf, prefix);  // "coll": "AllReduce", "p2p": "Send"
  const int64_t size = Int64(perf, (p + "_msg_size_bytes").c_str());
  const double time = Number(perf, (p + "_exec_time_us").c_str());
  out->algobw_gbs = Number(perf, (p + "_algobw_gbs").c_str());
  out->busbw_gbs = Number(perf, (p + "_busbw_gbs").c_str());
  if (out->op.empty() || out->op.size() > 32 || size < 0) return false;
  out->msg_size_bytes = static_cast<uint64_t>(size);
  out->exec_time_us = time < 0 ? 0 : time;
  out->sn = Int64(perf, (p + "_sn").c_str());
  if (out->busbw_gbs < 0 && out->algobw_gbs >= 0) {
    out->busbw_gbs = out->algobw_gbs * BusBwFactor(out->op, out->n_ranks);
  }
  if (out->busbw_gbs < 0 && time > 0) {
    // Neither bandwidth: from the size and the time, as nccl-tests computes algbw.
    out->algobw_gbs = static_cast<double>(size) / (time * 1e-6) / 1e9;
    out->busbw_gbs = out->algobw_gbs * BusBwFactor(out->op, out->n_ranks);
  }
  return out->busbw_gbs >= 0;
}

}  // namespace

double BusBwFactor(std::string_view op, int n_ranks) {
  if (n_ranks <= 1) return 1;
  const double n = n_ranks;
  if (op == "AllReduce") return 2 * (n - 1) / n;
  if (op == "AllGather" || op == "ReduceScatter" || op == "AlltoAll" || op == "AllToAll") {
    return (n - 1) / n;
  }
  return 1;
}

LineKind ParseJsonLine(std::string_view line, InspectorOp* out) {
  size_t first = 0;
  while (first < line.size() && std::isspace(static_cast<unsigned char>(line[first])) != 0) {
    ++first;
  }
  if (first == line.size()) return LineKind::kBlank;
  // Cheap refusals before the parser: a record is an object and names its version.
  if (line[first] != '{' || line.find("\"header\"") == std::string_view::npos) {
    return LineKind::kMalformed;
  }
  const Json j = Json::parse(line.substr(first), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return LineKind::kMalformed;
  const Json* header = Member(j, "header");
  const Json* metadata = Member(j, "metadata");
  if (header == nullptr || metadata == nullptr) return LineKind::kMalformed;
  *out = InspectorOp{};
  out->comm_id = CommId(*header);
  out->rank = Int(*header, "rank");
  out->n_ranks = Int(*header, "n_ranks");
  out->nnodes = Int(*header, "nnodes");
  out->hostname = String(*metadata, "hostname").substr(0, 253);
  out->pid = Int64(*metadata, "pid");
  out->dump_timestamp_us = Int64(*metadata, "dump_timestamp_us");
  out->comm_name = String(*header, "comm_name").substr(0, 128);
  if (out->comm_id.empty()) return LineKind::kMalformed;
  bool ok = false;
  if (const Json* coll = Member(j, "coll_perf"); coll != nullptr) {
    out->kind = OpKind::kCollective;
    ok = ReadPerf(*coll, "coll", out);
  } else if (const Json* p2p = Member(j, "p2p_perf"); p2p != nullptr) {
    out->kind = OpKind::kP2p;
    ok = ReadPerf(*p2p, "p2p", out);
  }
  if (!ok) return LineKind::kMalformed;
  return String(*metadata, "inspector_output_format_version") == kFormatVersion
             ? LineKind::kOp
             : LineKind::kOpOtherVersion;
}

bool LooksLikeInspectorJson(std::string_view first_line) {
  if (first_line.find("\"inspector_output_format_version\"") == std::string_view::npos) {
    return false;
  }
  const Json j = Json::parse(first_line, nullptr, /*allow_exceptions=*/false);
  const Json* metadata = Member(j, "metadata");
  return metadata != nullptr && Member(*metadata, "inspector_output_format_version") != nullptr;
}

uint64_t ParseMessageSize(std::string_view v) {
  while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
  double number = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), number);
  if (ec != std::errc() || number < 0 || !std::isfinite(number)) return 0;
  const char* const last = v.data() + v.size();
  if (end != last && *end == '-') {
    // A v5.1 class, "32-33MB": the lower bound names it; the upper must be a number too.
    double upper = 0;
    const auto [upper_end, upper_ec] = std::from_chars(end + 1, last, upper);
    if (upper_ec != std::errc() || upper < number) return 0;
    end = upper_end;
  }
  std::string unit(end, last);
  std::erase(unit, ' ');
  for (char& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  static const std::map<std::string, double> kUnits = {{"", 1},
                                                       {"B", 1},
                                                       {"KB", 1ull << 10},
                                                       {"KIB", 1ull << 10},
                                                       {"MB", 1ull << 20},
                                                       {"MIB", 1ull << 20},
                                                       {"GB", 1ull << 30},
                                                       {"GIB", 1ull << 30},
                                                       {"TB", 1ull << 40},
                                                       {"TIB", 1ull << 40}};
  const auto it = kUnits.find(unit);
  if (it == kUnits.end()) return 0;
  return static_cast<uint64_t>(
      common::CheckedInt(std::round(number * it->second), 0, int64_t{1} << 60).value_or(0));
}

namespace {

struct PromSample {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
  double value = 0;
};

// One exposition-format sample line: name{l="v",...} value [timestamp]. False when unreadable.
bool ParseSample(std::string_view line, PromSample* out) {
  size_t i = 0;
  while (i < line.size() && (std::isalnum(static_cast<unsigned char>(line[i])) != 0 ||
                             line[i] == '_' || line[i] == ':')) {
    ++i;
  }
  if (i == 0) return false;
  out->name = std::string(line.substr(0, i));
  out->labels.clear();
  if (i < line.size() && line[i] == '{') {
    ++i;
    while (i < line.size() && line[i] != '}') {
      const size_t eq = line.find('=', i);
      if (eq == std::string_view::npos || eq + 1 >= line.size() || line[eq + 1] != '"') {
        return false;
      }
      std::string name(line.substr(i, eq - i));
      std::erase(name, ' ');
      std::string value;
      size_t j = eq + 2;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size()) {
          ++j;
          value += line[j] == 'n' ? '\n' : line[j];
        } else {
          value += line[j];
        }
      }
      if (j >= line.size()) return false;
      out->labels.emplace_back(std::move(name), std::move(value));
      i = j + 1;
      while (i < line.size() && (line[i] == ',' || line[i] == ' ')) ++i;
    }
    if (i >= line.size()) return false;
    ++i;  // '}'
  }
  while (i < line.size() && line[i] == ' ') ++i;
  size_t end = i;
  while (end < line.size() && line[end] != ' ') ++end;
  const std::string number(line.substr(i, end - i));
  char* parsed_end = nullptr;
  out->value = std::strtod(number.c_str(), &parsed_end);
  return !number.empty() && parsed_end == number.c_str() + number.size() &&
         std::isfinite(out->value);
}

std::string Label(const PromSample& s, std::string_view name) {
  for (const auto& [k, v] : s.labels) {
    if (k == name) return v;
  }
  return {};
}

int IntLabel(const PromSample& s, std::string_view name) {
  return static_cast<int>(common::ParseInt(Label(s, name), 0, 1'000'000'000).value_or(-1));
}

bool HasLabel(const PromSample& s, std::string_view name) {
  for (const auto& [k, v] : s.labels) {
    if (k == name) return true;
  }
  return false;
}

// The labels that name one op: all but the metric's own.
std::string OpKey(const PromSample& s) {
  std::string key;
  for (const auto& [k, v] : s.labels) key += k + "=" + v + ",";
  return key;
}

}  // namespace

PromFile ParsePromText(std::string_view text) {
  PromFile out;
  std::map<std::string, double> exec_us;  // by OpKey
  std::vector<std::pair<PromSample, OpKind>> bandwidths;
  PromSample s;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    if (!line.starts_with("nccl_")) continue;  // another exporter's lines: not ours to count
    if (!ParseSample(line, &s)) {
      ++out.malformed;
      continue;
    }
    if (s.name == "nccl_bus_bandwidth_gbs") {
      bandwidths.emplace_back(s, OpKind::kCollective);
    } else if (s.name == "nccl_p2p_bus_bandwidth_gbs") {
      bandwidths.emplace_back(s, OpKind::kP2p);
    } else if (s.name == "nccl_collective_exec_time_microseconds" ||
               s.name == "nccl_p2p_exec_time_microseconds") {
      exec_us[OpKey(s)] = s.value;
    }
  }
  for (const auto& [b, kind] : bandwidths) {
    InspectorOp op;
    op.kind = kind;
    // v5.1 and later name no communicator and carry a `version`; 2.29 named it by comm_id.
    op.aggregated = !HasLabel(b, "comm_id");
    op.comm_id = NormalizeCommId(Label(b, "comm_id"));
    // The op's name: "collective" (both generations), "p2p_operation" (v5.1 P2P), "p2p" (older).
    for (const char* name : {"collective", "p2p_operation", "p2p"}) {
      if (op.op.empty()) op.op = Label(b, name);
    }
    op.msg_size_bytes = ParseMessageSize(Label(b, "message_size"));
    op.rank = IntLabel(b, "rank");
    op.n_ranks = IntLabel(b, HasLabel(b, "nranks") ? "nranks" : "n_ranks");
    op.nnodes = IntLabel(b, "n_nodes");
    op.hostname = Label(b, op.aggregated ? "node" : "hostname").substr(0, 253);
    op.pid = IntLabel(b, "pid");
    op.comm_name = Label(b, "comm_name").substr(0, 128);
    op.algo_proto = Label(b, "algo_proto").substr(0, 64);
    op.gpu = Label(b, op.aggregated ? "gpu" : "gpu_device_id").substr(0, 32);
    op.sn = common::ParseInt(Label(b, kind == OpKind::kCollective ? "coll_sn" : "p2p_sn"), 0,
                             int64_t{1} << 62)
                .value_or(-1);
    op.busbw_gbs = b.value;
    if (auto it = exec_us.find(OpKey(b)); it != exec_us.end()) op.exec_time_us = it->second;
    const bool named = op.aggregated ? !op.comm_name.empty() : !op.comm_id.empty();
    if (!named || op.op.empty() || op.op.size() > 32 || op.busbw_gbs < 0) {
      ++out.malformed;
      continue;
    }
    if (op.busbw_gbs == 0) {
      ++out.empty;  // the plugin writes 0 for an interval in which no op had a bandwidth
      continue;
    }
    out.ops.push_back(std::move(op));
  }
  return out;
}

}  // namespace efawatch::inspector
