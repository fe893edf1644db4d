// SPDX-License-Identifier: Apache-2.0
#include "daemon/export/family_sink.h"

#include <gtest/gtest.h>
#include <prometheus/text_serializer.h>

namespace efawatch::exporter {
namespace {

std::string Render(FamilySink& sink) { return prometheus::TextSerializer().Serialize(sink.Take()); }

TEST(FamilySinkTest, HistogramRendersBucketsSumCountAndInf) {
  FamilySink sink;
  common::HistogramSample h;
  h.bounds = {0.001, 0.01};
  h.cumulative = {3, 5};
  h.sum = 0.04;
  h.count = 6;
  sink.AddHistogram(metrics::M::kMeshPeerRttSeconds, {{"peer_node", "n1"}}, h);
  const std::string text = Render(sink);
  EXPECT_NE(text.find("# TYPE efawatch_mesh_peer_rtt_seconds histogram"), std::string::npos);
  EXPECT_NE(text.find(R"(efawatch_mesh_peer_rtt_seconds_bucket{peer_node="n1",le="0.001"} 3)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(efawatch_mesh_peer_rtt_seconds_bucket{peer_node="n1",le="+Inf"} 6)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(R"(efawatch_mesh_peer_rtt_seconds_count{peer_node="n1"} 6)"),
            std::string::npos);
}

TEST(FamilySinkTest, TypeMismatchesAreDropped) {
  FamilySink sink;
  // A histogram metric written as a plain sample, a gauge written as a histogram, and a
  // histogram whose counts do not match its bounds: none may reach /metrics.
  sink.Add(metrics::M::kMeshPeerRttSeconds, {{"peer_node", "n1"}}, 1);
  common::HistogramSample h{{0.1}, {1}, 0.05, 1};
  sink.AddHistogram(metrics::M::kMeshPeersExpected, {}, h);
  common::HistogramSample bad{{0.1, 0.2}, {1}, 0.05, 1};
  sink.AddHistogram(metrics::M::kMeshPeerRttSeconds, {{"peer_node", "n1"}}, bad);
  EXPECT_TRUE(sink.Take().empty());
}

TEST(FamilySinkTest, GaugesAndCountersKeepTheirTypes) {
  FamilySink sink;
  sink.Add(metrics::M::kMeshPeersExpected, {}, 4);
  sink.Add(metrics::M::kMeshRoundsTotal, {}, 9);
  const std::string text = Render(sink);
  EXPECT_NE(text.find("# TYPE efawatch_mesh_peers_expected gauge"), std::string::npos);
  EXPECT_NE(text.find("# TYPE efawatch_mesh_rounds_total counter"), std::string::npos);
  EXPECT_NE(text.find("efawatch_mesh_rounds_total 9"), std::string::npos);
}

}  // namespace
}  // namespace efawatch::exporter
