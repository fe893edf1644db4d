// SPDX-License-Identifier: Apache-2.0
// Every field of the agent's records crosses every edge: the checkpoint's JSON, the gRPC API
// (proto/codec) and Prometheus (WriteVerdictMetrics). Each test changes one field at a time
// through the record's own field list and expects the edge's output to change (or the field to
// come back), so a field added to a record and forgotten by an edge fails here.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <type_traits>

#include "daemon/logs/checkpoint_codec.h"
#include "daemon/logs/pod_analysis.h"
#include "daemon/logs/verdict_metrics.h"
#include "daemon/rpc/node_health_codec.h"
#include "proto/codec/collective.h"
#include "proto/codec/records.h"
#include "tests/unit/records/field_count.h"

namespace efawatch {
namespace {

using testing::FieldCount;

size_t VisitedFields() {
  nccl::Verdict v;
  size_t n = 0;
  nccl::ForEachField(v, [&](const char*, auto&) { ++n; });
  return n;
}

// Sets the field to a value unlike the one it has and unlike every other field's, by its index.
template <typename T>
void Perturb(T& field, size_t index) {
  if constexpr (std::is_same_v<T, bool>) {
    field = !field;
  } else if constexpr (std::is_same_v<T, std::string>) {
    field = "value-" + std::to_string(index);
  } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
    field.push_back("value-" + std::to_string(index));
  } else if constexpr (nccl::NamedEnum<T>) {
    const size_t n = nccl::EnumNames<T>::kNames.size();
    field = static_cast<T>((static_cast<size_t>(field) + 1) % n);
  } else {
    field = static_cast<T>(100 + index);
  }
}

nccl::Verdict WithField(size_t which, nccl::Verdict v = {}) {
  size_t i = 0;
  nccl::ForEachField(v, [&](const char*, auto& field) {
    if (i == which) Perturb(field, i);
    ++i;
  });
  return v;
}

std::string FieldName(size_t which) {
  const nccl::Verdict v;
  std::string name;
  size_t i = 0;
  nccl::ForEachField(v, [&](const char* n, const auto&) {
    if (i++ == which) name = n;
  });
  return name;
}

nccl::Verdict EveryField() {
  nccl::Verdict v;
  size_t i = 0;
  nccl::ForEachField(v, [&](const char*, auto& field) { Perturb(field, i++); });
  return v;
}

TEST(VerdictRecordTest, ForEachFieldVisitsEveryField) {
  EXPECT_EQ(VisitedFields(), FieldCount<nccl::Verdict>())
      << "a field of nccl::Verdict is missing from ForEachField (lib/nccl/verdict.h)";
}

TEST(VerdictRecordTest, CheckpointJsonCarriesEveryField) {
  const nccl::Verdict v = EveryField();
  nlohmann::json j = nlohmann::json::object();
  logs::VerdictToJson(v, j);
  // Through text, as the checkpoint file does.
  EXPECT_EQ(logs::VerdictFromJson(nlohmann::json::parse(j.dump())), v);
}

TEST(VerdictRecordTest, CheckpointJsonOfTheWrongShapeReadsAsDefaults) {
  const auto j = nlohmann::json::parse(
      R"({"tcp_fallback": "yes", "network": 7, "processes": -3, "errors": [1], "warnings": 4})");
  nccl::Verdict want;
  want.warnings = 4;
  EXPECT_EQ(logs::VerdictFromJson(j), want);
  EXPECT_EQ(logs::VerdictFromJson(nlohmann::json::array({1, "x", nullptr})), nccl::Verdict{});
}

TEST(VerdictRecordTest, ProtoCarriesEveryField) {
  for (size_t i = 0; i < VisitedFields(); ++i) {
    const nccl::Verdict v = WithField(i);
    v1::NcclVerdict p;
    codec::ToProto(v, &p);
    v1::NcclVerdict wire;
    ASSERT_TRUE(wire.ParseFromString(p.SerializeAsString()));
    EXPECT_EQ(codec::FromProto(wire), v) << "field " << FieldName(i) << " does not cross the proto";
  }
  const nccl::Verdict all = EveryField();
  v1::NcclVerdict p;
  codec::ToProto(all, &p);
  EXPECT_EQ(codec::FromProto(p), all);
}

// Every message that carries a verdict carries all of it: a pod's and a collective rank's.
TEST(VerdictRecordTest, PodAndCollectiveMessagesEmbedTheWholeVerdict) {
  const nccl::Verdict all = EveryField();
  common::NodeHealth h;
  h.pods.push_back({.namespace_name = "ns",
                    .pod = "pod",
                    .container = "main",
                    .nccl = all,
                    .workload_kind = "RayCluster",
                    .workload = "train",
                    .source = "pod_volume",
                    .files = 3,
                    .stack = {}});
  v1::NodeHealth hp;
  rpc::ToProto(h, &hp);
  ASSERT_EQ(rpc::FromProto(hp).pods.size(), 1u);
  EXPECT_EQ(rpc::FromProto(hp).pods[0].nccl, all);

  collective::RankResult rank;
  rank.nccl = collective::NcclObservation{.log_file = "nccl.log", .verdict = all, .findings = {}};
  v1::RankResult rp;
  codec::ToProto(rank, &rp);
  const collective::RankResult back = codec::FromProto(rp);
  ASSERT_TRUE(back.nccl.has_value());
  EXPECT_EQ(back.nccl->verdict, all);
}

struct RecordingSink final : common::MetricSink {
  void Add(metrics::Metric metric, const common::Labels& labels, double value) override {
    std::string key(metric.name());
    for (const auto& [k, v] : labels) key += "," + k + "=" + v;
    samples[key] = value;
  }
  void AddHistogram(metrics::Metric, const common::Labels&,
                    const common::HistogramSample&) override {}
  std::map<std::string, double> samples;
};

std::map<std::string, double> Render(const nccl::Verdict& v) {
  logs::ContainerVerdict c;
  c.source.namespace_name = "ns";
  c.source.pod = "pod";
  c.source.container = "main";
  c.lines = 10;
  c.nccl_lines = 5;
  c.nccl = v;
  RecordingSink sink;
  logs::WriteVerdictMetrics(c, sink);
  return sink.samples;
}

// Fields /metrics does not show, on purpose: the alert rules derive certainty from the node
// evidence and tcp_deliberate (tcp_certain, tcp_suspected, loopback_certain), the family and the
// GDR state follow the network and gdr_disabled, node and rank counts are per communicator
// (efawatch_nccl_communicator_info), the failure and the warning kinds are findings
// (efawatch_findings).
const std::set<std::string> kNotOnMetrics = {"tcp_certain", "tcp_suspected", "loopback_certain",
                                             "family",      "gdr",           "nodes",
                                             "ranks",       "failure",       "warning_kinds"};

TEST(VerdictRecordTest, MetricsShowEveryFieldButTheListedOnes) {
  const auto base = Render(nccl::Verdict{});
  for (size_t i = 0; i < VisitedFields(); ++i) {
    const std::string name = FieldName(i);
    if (kNotOnMetrics.contains(name)) {
      EXPECT_EQ(Render(WithField(i)), base) << name << " is listed as not on /metrics, but shows";
    } else {
      EXPECT_NE(Render(WithField(i)), base) << "field " << name << " does not reach /metrics";
    }
  }
}

// Fields the headline does not word: the flags and counts whose findings it lists by kind, and
// the version `analyze` and `status` print beside it.
const std::set<std::string> kNotInHeadline = {
    "loopback_misuse", "net_plugin_missing", "gdr_disabled", "nccl_version",
    "processes",       "communicators",      "warnings",     "errors"};

// Verdicts in which each field the headline words changes it: no single verdict shows them all
// (the provider only matters on OFI, the GDR state only with a known transport, ...).
std::vector<nccl::Verdict> HeadlineBases() {
  nccl::Verdict tcp_ofi;
  tcp_ofi.tcp_fallback = tcp_ofi.tcp_suspected = true;
  tcp_ofi.family = nccl::NetFamily::kOFI;
  tcp_ofi.ofi_provider = "tcp;ofi_rxm";
  nccl::Verdict certain;
  certain.tcp_certain = true;
  nccl::Verdict deliberate;
  deliberate.tcp_fallback = true;
  nccl::Verdict multi;
  multi.nodes_evidence = nccl::NodesEvidence::kProvenMulti;
  multi.transport = "NET/IB";
  multi.gdr = nccl::Gdr::kOn;
  return {nccl::Verdict{}, tcp_ofi, certain, deliberate, multi};
}

TEST(VerdictRecordTest, HeadlineWordsEveryFieldButTheListedOnes) {
  for (size_t i = 0; i < VisitedFields(); ++i) {
    const std::string name = FieldName(i);
    bool changes = false;
    for (const nccl::Verdict& base : HeadlineBases()) {
      changes = changes || nccl::VerdictHeadline(WithField(i, base)) != nccl::VerdictHeadline(base);
    }
    EXPECT_EQ(changes, !kNotInHeadline.contains(name))
        << name
        << (changes ? " is listed as not in the headline, but changes it"
                    : " does not reach the headline (lib/nccl/verdict.cc)");
  }
}

TEST(FindingRecordTest, ProtoAndCheckpointCarryEveryField) {
  common::Finding f;
  f.kind = "tcp_fallback";
  f.severity = common::Severity::kCritical;
  f.subject = "ns/pod/main";
  f.message = "NCCL over sockets";
  f.evidence.source = "0.log";
  f.evidence.line = 42;
  f.evidence.text = "NET/Socket : Using [0]eth0";
  f.first_seen = std::chrono::system_clock::time_point(std::chrono::seconds(1700000000));
  f.last_seen = f.first_seen + std::chrono::seconds(5);
  f.namespace_name = "ns";
  f.pod = "pod";

  v1::Finding p;
  codec::ToProto(f, &p);
  const common::Finding back = codec::FromProto(p);
  EXPECT_EQ(back.kind, f.kind);
  EXPECT_EQ(back.severity, f.severity);
  EXPECT_EQ(back.subject, f.subject);
  EXPECT_EQ(back.message, f.message);
  EXPECT_EQ(back.evidence.source, f.evidence.source);
  EXPECT_EQ(back.evidence.line, f.evidence.line);
  EXPECT_EQ(back.evidence.text, f.evidence.text);
  EXPECT_EQ(back.first_seen, f.first_seen);
  EXPECT_EQ(back.last_seen, f.last_seen);

  const common::Finding restored =
      logs::FindingFromJson(nlohmann::json::parse(logs::FindingToJson(f).dump()));
  EXPECT_EQ(restored.kind, f.kind);
  EXPECT_EQ(restored.severity, f.severity);
  EXPECT_EQ(restored.subject, f.subject);
  EXPECT_EQ(restored.message, f.message);
  EXPECT_EQ(restored.evidence.source, f.evidence.source);
  EXPECT_EQ(restored.evidence.line, f.evidence.line);
  EXPECT_EQ(restored.evidence.text, f.evidence.text);
  EXPECT_EQ(restored.namespace_name, f.namespace_name);
  EXPECT_EQ(restored.pod, f.pod);
  // Left out of the proto: `subject` already names the pod there ("ns/pod/container"), and the
  // pod analysis stamps both fields on every finding it evaluates (restored ones included).
  EXPECT_EQ(FieldCount<common::Finding>(), 9u)
      << "common::Finding gained a field: add it to both codecs and to this test";
}

TEST(ProbeEndRecordTest, EveryEndCrossesTheProtoAndHasOneNameAndOneText) {
  std::set<std::string> names;
  for (auto e : {common::ProbeEnd::kCompleted, common::ProbeEnd::kDeadlineExceeded,
                 common::ProbeEnd::kPeerTimedOut, common::ProbeEnd::kCancelled}) {
    EXPECT_EQ(codec::FromProto(codec::ToProto(e)), e);
    EXPECT_NE(std::string(common::ProbeEndName(e)), "unknown");
    EXPECT_THAT(common::ProbeEndName(e), ::testing::Not(::testing::HasSubstr(" ")));
    names.insert(common::ProbeEndText(e));
  }
  EXPECT_EQ(names.size(), 4u);
  EXPECT_STREQ(common::ProbeEndText(common::ProbeEnd::kDeadlineExceeded), "deadline exceeded");
}

TEST(SeverityRecordTest, EverySeverityCrossesTheProto) {
  for (auto s :
       {common::Severity::kInfo, common::Severity::kWarning, common::Severity::kCritical}) {
    common::Finding f;
    f.severity = s;
    v1::Finding p;
    codec::ToProto(f, &p);
    EXPECT_EQ(codec::FromProto(p.severity()), s);
  }
}

}  // namespace
}  // namespace efawatch
