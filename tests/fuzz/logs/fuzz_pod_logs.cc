// SPDX-License-Identifier: Apache-2.0
// libFuzzer entry point over the agent's whole pod log path, in-process: arbitrary bytes are a
// pod's log (CRI, docker json-file or plain, chosen by the first byte), written in two parts
// with a pass of the real Tailer between them, analyzed by the real PodAnalysis, then rendered
// by every edge: the Prometheus text, the checkpoint (restored into a second analysis) and the
// proto messages of `efawatch status`. Each edge must accept what it gets: the scrape and the
// checkpoint must be valid UTF-8, the proto must parse back, the restored state must be valid.
// Finally the log is deleted and the grace period passes: nothing may be left.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include "daemon/export/family_sink.h"
#include "daemon/logs/pod_analysis.h"
#include "daemon/logs/tailer.h"
#include "daemon/logs/tailer_collector.h"
#include "daemon/logs/verdict_metrics.h"
#include "efawatch/v1/agent.pb.h"
#include "lib/common/findings_board.h"
#include "lib/common/utf8.h"
#include "proto/codec/records.h"
#include "spdlog/spdlog.h"
#include "tests/support/fake_clock.h"

namespace {

namespace fs = std::filesystem;
using namespace efawatch;

const fs::path& Root() {
  static const fs::path root = [] {
    std::string t = (fs::temp_directory_path() / "fuzz_pod_logs.XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) abort();
    return fs::path(t);
  }();
  return root;
}

void Append(const fs::path& f, std::string_view bytes) {
  std::ofstream out(f, std::ios::app | std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

// The proto messages `efawatch status` receives must parse back (proto3 checks UTF-8).
void CheckProto(const logs::PodAnalysis& pods, const common::FindingsBoard& board) {
  v1::NodeHealth h;
  for (const auto& v : pods.Verdicts()) {
    auto* p = h.add_pods();
    p->set_namespace_(v.source.namespace_name);
    p->set_pod(v.source.pod);
    p->set_container(v.source.container);
    codec::ToProto(v.nccl, p->mutable_nccl());
  }
  for (const auto& f : *board.Snapshot()) codec::ToProto(f, h.add_findings());
  std::string wire;
  Check(h.SerializeToString(&wire));
  v1::NodeHealth back;
  Check(back.ParseFromString(wire));
}

}  // namespace

// The agent logs each container's verdict headline when it changes: thousands of lines a
// second here, which would bury the fuzzer's own output.
extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  spdlog::set_level(spdlog::level::warn);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t mode = size > 0 ? data[0] : 0;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  if (size > 0) input.remove_prefix(1);
  const size_t cut = size > 1 ? (static_cast<size_t>(data[1]) * input.size()) / 256 : 0;

  const fs::path root = Root();
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root / "pods", ec);
  fs::path file;
  logs::TailerOptions o;
  o.pod_log_root = root / "pods";
  // The tailer's checkpoint fsyncs: written for a few inputs only, to keep the rate up (the
  // sink's part, which holds the log text, is checked on every input below).
  if ((mode & 32) != 0) o.state_file = root / "state.json";
  o.max_line_bytes = (mode & 8) != 0 ? 64 : 64 * 1024;     // small: the cutting paths run
  o.read_chunk_bytes = (mode & 16) != 0 ? 1000 : 1 << 20;  // lines cut across reads
  switch (mode & 3) {
    case 0:
    case 1:
      file = root / "pods" / "ns_pod-0_uid" / "main" / "0.log";
      break;
    case 2:
      file = root / "glob" / "abc-json.log";
      o.globs.push_back((root / "glob" / "*-json.log").string());
      break;
    default:
      file = root / "glob" / "nccl.host.1";
      o.globs.push_back((root / "glob" / "nccl.*").string());
      break;
  }
  fs::create_directories(file.parent_path(), ec);

  common::FakeClock clock;
  common::FindingsBoard board(clock);
  logs::PodAnalysisOptions po;
  if ((mode & 4) != 0) {
    po.max_communicators_per_pod = 2;
    po.analyzer.max_processes = 3;
    po.analyzer.max_comms_per_process = 2;
  }
  logs::PodAnalysis pods(po, clock, &board);
  logs::Tailer tailer(o, &pods, clock);
  logs::VerdictCollector verdicts(pods);
  logs::TailerCollector tailer_metrics(tailer.counters());
  tailer.LoadState();

  Append(file, input.substr(0, cut));
  tailer.PollOnce();
  Append(file, input.substr(cut));
  while (tailer.PollOnce()) {
  }

  const std::string scrape = exporter::RenderCollectors({&verdicts, &tailer_metrics}, {});
  Check(common::IsValidUtf8(scrape));
  CheckProto(pods, board);
  const std::string saved = pods.Checkpoint();
  Check(common::IsValidUtf8(saved));
  Check(pods.CheckpointValid(saved));
  {
    common::FindingsBoard board2(clock);
    logs::PodAnalysis restored(po, clock, &board2);
    restored.Restore(saved);
    restored.OnPassComplete();
    Check(restored.Verdicts().size() == pods.Verdicts().size());
    CheckProto(restored, board2);
  }

  // The pod goes: after the grace period nothing of it is left.
  fs::remove_all(file.parent_path().parent_path() == root ? file.parent_path()
                                                          : file.parent_path().parent_path(),
                 ec);
  tailer.PollOnce();
  clock.Advance(po.grace_period + std::chrono::seconds(1));
  tailer.PollOnce();
  Check(pods.Verdicts().empty());
  Check(board.Snapshot()->empty());
  Check(tailer.counters().files_watched == 0);
  return 0;
}
