// SPDX-License-Identifier: Apache-2.0
// libFuzzer entry point over the checkpoint loader: arbitrary bytes as the agent's state file
// (the first byte chooses: the whole file, or a well-formed file whose sink state is the bytes).
// Loading must never crash; a checkpoint either restores or is set aside whole; and whatever the
// agent then writes must load again without being set aside.
#include <stdlib.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "daemon/logs/pod_analysis.h"
#include "daemon/logs/tailer.h"
#include "lib/common/findings_board.h"
#include "tests/support/fake_clock.h"

namespace {

namespace fs = std::filesystem;
using namespace efawatch;

const fs::path& Root() {
  static const fs::path root = [] {
    std::string t = (fs::temp_directory_path() / "fuzz_checkpoint.XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) abort();
    return fs::path(t);
  }();
  return root;
}

void Check(bool ok) {
  if (!ok) __builtin_trap();
}

struct Agent {
  explicit Agent(const logs::TailerOptions& o) : tailer(o, &pods, clock) {}
  common::FakeClock clock;
  common::FindingsBoard board{clock};
  logs::PodAnalysis pods{logs::PodAnalysisOptions{}, clock, &board};
  logs::Tailer tailer;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const uint8_t mode = size > 0 ? data[0] : 0;
  const fs::path root = Root();
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root / "pods" / "ns_pod-0_uid" / "main", ec);
  std::ofstream(root / "pods" / "ns_pod-0_uid" / "main" / "0.log")
      << "2026-12-02T10:00:00Z stdout F host:1:1 [0] NCCL INFO Using network Socket\n";
  logs::TailerOptions o;
  o.pod_log_root = root / "pods";
  o.state_file = root / "state.json";
  {
    std::ofstream out(o.state_file, std::ios::binary);
    if ((mode & 1) != 0 && size > 0) {
      input.remove_prefix(1);
      nlohmann::json j = {{"version", 1}, {"files", nlohmann::json::array()}};
      j["sink"] = std::string(input);
      out << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    } else {
      out.write(input.data(), static_cast<std::streamsize>(input.size()));
    }
  }
  {
    Agent a(o);
    a.tailer.LoadState();
    const bool set_aside = a.tailer.counters().checkpoints_set_aside == 1;
    Check(set_aside == fs::exists(o.state_file.string() + ".bad"));
    a.tailer.PollOnce();  // reads the log, writes a fresh checkpoint
  }
  Agent b(o);
  b.tailer.LoadState();
  Check(b.tailer.counters().checkpoints_set_aside == 0);
  b.tailer.PollOnce();
  Check(!b.pods.Verdicts().empty());
  return 0;
}
