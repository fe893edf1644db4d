// SPDX-License-Identifier: Apache-2.0
// The fabric probes' records and the node snapshot cross the API (proto/codec/probes,
// daemon/rpc/node_health_codec) with every field the API carries. Each record is filled with
// values unlike its defaults, sent through ToProto and FromProto and compared whole; fields that
// stay in the agent are listed by name, and a field count per record fails when a field is added,
// so the codec and this test are looked at together.

#include <gtest/gtest.h>

#include "daemon/rpc/node_health_codec.h"
#include "proto/codec/doctor.h"
#include "proto/codec/probes.h"
#include "tests/unit/records/field_count.h"

namespace efawatch {
namespace {

using namespace std::chrono_literals;

// What the API carries of the probing side's FabricInfo: provider, fabric, domain, rma. The rest
// (requested, versions, MR modes, sizes, wait object) describes the local endpoint only.
fabric::FabricInfo CarriedFabric() {
  fabric::FabricInfo f;
  f.provider = "tcp;ofi_rxm";
  f.fabric = "127.0.0.1/32";
  f.domain = "lo";
  f.rma = true;
  return f;
}

fabric::PingResult FullPing() {
  fabric::PingResult r;
  r.fabric = CarriedFabric();
  r.local_address = "fi_sockaddr_in://127.0.0.1:40001";
  r.peer_address = "fi_sockaddr_in://127.0.0.1:40002";
  r.message_bytes = 4096;
  r.sent = 100;
  r.received = 97;
  r.lost = 3;
  r.errors = 1;
  r.loss_ratio = 0.04;
  r.rtt = {.count = 97,
           .min_us = 10,
           .median_us = 12,
           .p90_us = 15,
           .p99_us = 30,
           .max_us = 31,
           .mean_us = 13};
  r.end = common::ProbeEnd::kPeerTimedOut;
  r.last_error = "Connection refused";
  r.elapsed = 1500ms;
  return r;
}

TEST(ProbeRecordsTest, FieldCountsMatchTheCodec) {
  // A new field: map it in proto/codec/probes.cc (or list it below as agent-only), set it in the
  // tests below, then bump here.
  // PingResult's agent-only fields: late, rtt_us, timed_loop.
  EXPECT_EQ(testing::FieldCount<fabric::PingResult>(), 16u);
  EXPECT_EQ(testing::FieldCount<fabric::BandwidthResult>(), 11u);
  EXPECT_EQ(testing::FieldCount<fabric::BandwidthPoint>(), 5u);
  EXPECT_EQ(testing::FieldCount<fabric::RttSummary>(), 7u);
  // 4 carried, see CarriedFabric; source (whether the responder checks senders) is logged only.
  EXPECT_EQ(testing::FieldCount<fabric::FabricInfo>(), 16u);
  // endpoint, peer: the caller's; background: the mesh's own
  EXPECT_EQ(testing::FieldCount<fabric::PingOptions>(), 8u);
  EXPECT_EQ(testing::FieldCount<fabric::BandwidthOptions>(), 9u);  // also stall_timeout
  EXPECT_EQ(testing::FieldCount<common::NodeHealth>(), 10u);
  EXPECT_EQ(testing::FieldCount<inspector::CommSummary>(), 7u);
  EXPECT_EQ(testing::FieldCount<inspector::OpSummary>(), 4u);
  EXPECT_EQ(testing::FieldCount<common::CollectorState>(), 5u);
  EXPECT_EQ(testing::FieldCount<common::PodVerdict>(), 9u);
}

TEST(ProbeRecordsTest, PingResultCrossesWithEveryCarriedField) {
  const fabric::PingResult full = FullPing();
  v1::PingResponse p;
  codec::ToProto(full, &p);
  EXPECT_EQ(codec::FromProto(p), full);

  fabric::PingResult local = full;  // what stays in the agent does not travel
  local.late = 2;
  local.rtt_us = {10, 12};
  local.timed_loop = 1200ms;
  local.fabric.requested = "tcp";
  local.fabric.max_msg_size = 1 << 20;
  v1::PingResponse q;
  codec::ToProto(local, &q);
  EXPECT_EQ(codec::FromProto(q), full);
}

TEST(ProbeRecordsTest, BandwidthResultCrossesWithEveryCarriedField) {
  fabric::BandwidthResult r;
  r.fabric = CarriedFabric();
  r.local_address = "a";
  r.peer_address = "b";
  r.bidirectional = true;
  r.rma = true;
  r.window = 8;
  r.points = {{.message_bytes = 4096,
               .messages = 10,
               .bytes = 40960,
               .seconds = 0.5,
               .gbytes_per_second = 8.2e-5},
              {.message_bytes = 1 << 20, .messages = 3, .bytes = 3 << 20, .seconds = 0.25}};
  r.errors = 2;
  r.end = common::ProbeEnd::kDeadlineExceeded;
  r.last_error = "stalled";
  r.elapsed = 2500ms;
  v1::BandwidthResponse p;
  codec::ToProto(r, &p);
  EXPECT_EQ(codec::FromProto(p), r);
}

TEST(ProbeRecordsTest, RequestsSetEveryOptionAndZeroMeansTheDefault) {
  v1::PingRequest ping;
  EXPECT_EQ(codec::FromProto(ping), fabric::PingOptions{});
  ping.set_count(5);
  ping.set_message_bytes(128);
  ping.set_warmup(2);
  ping.set_message_timeout_ms(300);
  ping.set_deadline_ms(4000);
  fabric::PingOptions want;
  want.count = 5;
  want.message_bytes = 128;
  want.warmup = 2;
  want.message_timeout = 300ms;
  want.deadline = 4000ms;
  EXPECT_EQ(codec::FromProto(ping), want);

  v1::BandwidthRequest bw;
  EXPECT_EQ(codec::FromProto(bw), fabric::BandwidthOptions{});
  bw.add_sizes(4096);
  bw.add_sizes(65536);
  bw.set_bidirectional(true);
  bw.set_rma(true);
  bw.set_window(4);
  bw.set_ms_per_size(50);
  bw.set_deadline_ms(900);
  fabric::BandwidthOptions bwant;
  bwant.sizes = {4096, 65536};
  bwant.bidirectional = true;
  bwant.rma = true;
  bwant.window = 4;
  bwant.duration_per_size = 50ms;
  bwant.deadline = 900ms;
  EXPECT_EQ(codec::FromProto(bw), bwant);
}

TEST(ProbeRecordsTest, NodeHealthCrossesWithEveryField) {
  const auto t0 = std::chrono::system_clock::time_point(1'700'000'000s);
  common::NodeHealth h;
  h.node = "node-a";
  h.agent_version = "1.2.3";
  h.agent_revision = "abc";
  h.start_time = t0;
  h.collectors = {{.name = "efa",
                   .ok = true,
                   .last_error = "",
                   .last_run = t0 + 5s,
                   .last_duration_seconds = 0.25},
                  {.name = "logs", .ok = false, .last_error = "never run"}};
  h.findings = {{.kind = "efa_port_down",
                 .severity = common::Severity::kCritical,
                 .subject = "rdmap0s6",
                 .message = "port 1 is DOWN",
                 .evidence = {.source = "/sys/class/infiniband", .line = 0, .text = "1: DOWN"},
                 .first_seen = t0,
                 .last_seen = t0 + 1s,
                 .namespace_name = "",
                 .pod = ""}};
  h.fabric_provider = "efa";
  h.efa_devices = 4;
  common::PodVerdict pod;
  pod.namespace_name = "ml";
  pod.pod = "trainer-0";
  pod.container = "worker";
  pod.nccl.tcp_fallback = true;
  pod.nccl.network = "Socket";
  pod.nccl.nodes_evidence = nccl::NodesEvidence::kProvenMulti;
  pod.workload_kind = "RayCluster";
  pod.workload = "ft";
  pod.source = "volume";
  pod.files = 3;
  pod.stack.nccl_version = "2.27.5";
  pod.stack.net_plugin = "aws-ofi-nccl";
  pod.stack.net_plugin_version = "1.14.0";
  pod.stack.ofi_provider = "efa";
  pod.stack.gdr = "on";
  pod.stack.settings = {{"FI_EFA_FORK_SAFE", "1"}, {"NCCL_PROTO", "simple"}};
  common::PodVerdict bare = pod;
  bare.pod = "bare-0";
  bare.stack = {};
  h.pods = {pod, bare};
  h.inspector = {{.namespace_name = "ml",
                  .pod = "trainer-0",
                  .comm_id = "0xabc",
                  .comm_name = "unknown",
                  .last_progress_unix_us = 1'765'000'000'123'456,
                  .stale = true,
                  .ops = {{.collective = "AllReduce",
                           .size_bucket = "256MiB",
                           .count = 40,
                           .exec_seconds = 0.8}}},
                 {.namespace_name = "ml",
                  .pod = "trainer-0",
                  .comm_id = "",
                  .comm_name = "tp",
                  .last_progress_unix_us = 0,
                  .stale = false,
                  .ops = {}}};
  v1::NodeHealth p;
  rpc::ToProto(h, &p);
  const common::NodeHealth back = rpc::FromProto(p);
  EXPECT_EQ(back.node, h.node);
  EXPECT_EQ(back.agent_version, h.agent_version);
  EXPECT_EQ(back.agent_revision, h.agent_revision);
  EXPECT_EQ(back.start_time, h.start_time);
  ASSERT_EQ(back.collectors.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.collectors[i].name, h.collectors[i].name);
    EXPECT_EQ(back.collectors[i].ok, h.collectors[i].ok);
    EXPECT_EQ(back.collectors[i].last_error, h.collectors[i].last_error);
    EXPECT_EQ(back.collectors[i].last_run, h.collectors[i].last_run);
    EXPECT_EQ(back.collectors[i].last_duration_seconds, h.collectors[i].last_duration_seconds);
  }
  ASSERT_EQ(back.findings.size(), 1u);
  EXPECT_EQ(back.findings[0].kind, "efa_port_down");
  EXPECT_EQ(back.findings[0].last_seen, t0 + 1s);
  EXPECT_EQ(back.fabric_provider, h.fabric_provider);
  EXPECT_EQ(back.efa_devices, h.efa_devices);
  EXPECT_EQ(back.inspector, h.inspector);
  ASSERT_EQ(back.pods.size(), 2u);
  EXPECT_EQ(back.pods[0].stack, pod.stack);
  EXPECT_FALSE(back.pods[1].stack.Known()) << "a stack the log did not show stays absent";
  EXPECT_EQ(back.pods[0].namespace_name, "ml");
  EXPECT_EQ(back.pods[0].pod, "trainer-0");
  EXPECT_EQ(back.pods[0].container, "worker");
  EXPECT_EQ(back.pods[0].workload_kind, "RayCluster");
  EXPECT_EQ(back.pods[0].workload, "ft");
  EXPECT_EQ(back.pods[0].source, "volume");
  EXPECT_EQ(back.pods[0].files, 3u);
  EXPECT_TRUE(back.pods[0].nccl.tcp_fallback);
  EXPECT_EQ(back.pods[0].nccl.network, "Socket");
  EXPECT_EQ(back.pods[0].nccl.nodes_evidence, nccl::NodesEvidence::kProvenMulti);
}

TEST(DoctorRecordsTest, ChecksAndReportsCrossWithEveryField) {
  EXPECT_EQ(testing::FieldCount<doctor::Check>(), 5u);
  EXPECT_EQ(testing::FieldCount<doctor::ProcessReport>(), 5u);
  EXPECT_EQ(testing::FieldCount<doctor::Report>(), 4u);
  for (doctor::Status st : {doctor::Status::kPass, doctor::Status::kWarn, doctor::Status::kFail,
                            doctor::Status::kSkip}) {
    const doctor::Check c{.id = "settings.fi_provider",
                          .status = st,
                          .summary = "s",
                          .evidence = "FI_PROVIDER=tcp",
                          .fix = "set FI_PROVIDER=efa"};
    v1::DoctorCheck p;
    codec::ToProto(c, &p);
    const doctor::Check back = codec::FromProto(p);
    EXPECT_EQ(back.id, c.id);
    EXPECT_EQ(back.status, c.status);
    EXPECT_EQ(back.summary, c.summary);
    EXPECT_EQ(back.evidence, c.evidence);
    EXPECT_EQ(back.fix, c.fix);
  }
  doctor::Report r;
  r.ran_at = std::chrono::system_clock::time_point(1'700'000'000s);
  r.node = {{.id = "a", .status = doctor::Status::kFail, .summary = "", .evidence = "", .fix = ""}};
  r.processes = {{.pid = 42,
                  .namespace_name = "ml",
                  .pod = "p",
                  .container_id = "c",
                  .checks = {{.id = "b",
                              .status = doctor::Status::kWarn,
                              .summary = "",
                              .evidence = "",
                              .fix = ""}}}};
  r.processes_skipped = 3;
  v1::DoctorReport p;
  rpc::ToProto(r, &p);
  const doctor::Report back = rpc::FromProto(p);
  EXPECT_EQ(back.ran_at, r.ran_at);
  ASSERT_EQ(back.node.size(), 1u);
  EXPECT_EQ(back.node[0].status, doctor::Status::kFail);
  ASSERT_EQ(back.processes.size(), 1u);
  EXPECT_EQ(back.processes[0].pid, 42);
  EXPECT_EQ(back.processes[0].namespace_name, "ml");
  EXPECT_EQ(back.processes[0].pod, "p");
  EXPECT_EQ(back.processes[0].container_id, "c");
  ASSERT_EQ(back.processes[0].checks.size(), 1u);
  EXPECT_EQ(back.processes[0].checks[0].id, "b");
  EXPECT_EQ(back.processes_skipped, 3u);
}

}  // namespace
}  // namespace efawatch
