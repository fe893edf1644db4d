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

// Sets the field to a value unlike its default and unlike every other field's, by its index.
template <typename T>
void Perturb(T& field, size_t index) {
  if constexpr (std::is_same_v<T, bool>) {
    field = !field;
  } else if constexpr (std::is_same_v<T, std::string>) {
    field = "value-" + std::to_string(index);
  } else {
    field = static_cast<T>(100 + index);
  }
}

nccl::Verdict WithField(size_t which) {
  nccl::Verdict v;
  size_t i = 0;
  nccl::ForEachField(v, [&](const char*, auto& field) {
    if (i == which) Perturb(field, i);
    ++i;
  });
  return v;
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

// Fields the API message does not carry, on purpose (counters belong on /metrics).
const std::set<std::string> kNotInPodVerdictProto = {"warnings", "errors"};

TEST(VerdictRecordTest, ProtoCarriesEveryFieldButTheListedOnes) {
  for (size_t i = 0; i < VisitedFields(); ++i) {
    const nccl::Verdict v = WithField(i);
    std::string name;
    size_t k = 0;
    nccl::ForEachField(v, [&](const char* n, const auto&) {
      if (k++ == i) name = n;
    });
    v1::PodVerdict p;
    codec::ToProto(v, &p);
    const nccl::Verdict back = codec::FromProto(p);
    if (kNotInPodVerdictProto.contains(name)) {
      EXPECT_EQ(back, nccl::Verdict{}) << name << " is listed as not in the proto, but crossed";
    } else {
      EXPECT_EQ(back, v) << "field " << name << " does not cross the proto edge";
    }
  }
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

TEST(VerdictRecordTest, MetricsShowEveryField) {
  const auto base = Render(nccl::Verdict{});
  for (size_t i = 0; i < VisitedFields(); ++i) {
    const nccl::Verdict none;
    std::string name;
    size_t k = 0;
    nccl::ForEachField(none, [&](const char* n, const auto&) {
      if (k++ == i) name = n;
    });
    EXPECT_NE(Render(WithField(i)), base) << "field " << name << " does not reach /metrics";
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
  EXPECT_EQ(FieldCount<common::Finding>(), 7u)
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
