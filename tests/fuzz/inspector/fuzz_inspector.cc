// SPDX-License-Identifier: Apache-2.0
// Any bytes, as lines of an Inspector JSON Lines file, as a Prometheus-mode file (both
// generations) and as the Inspector's start lines in a log: no crash, no exception, no undefined
// behaviour (UBSan: a number out of range before a conversion), and every op that comes out is
// one the agent can label (a 0x-hex comm id, or a v5.1 sample's comm_name; a positive or zero
// busbw) and count within the table's bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "lib/inspector/record.h"
#include "lib/inspector/start_lines.h"
#include "lib/inspector/stats.h"

namespace {

void Check(const efawatch::inspector::InspectorOp& op) {
  const bool named = op.aggregated
                         ? op.comm_id.empty() && !op.comm_name.empty() && op.comm_name.size() <= 128
                         : op.comm_id.starts_with("0x") && op.comm_id.size() <= 18;
  if (!named || !(op.busbw_gbs >= 0) || op.op.empty() || op.msg_size_bytes > (uint64_t{1} << 60)) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace efawatch::inspector;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  CommTable table(CommTable::Limits{.max_comms = 4, .max_keys_per_comm = 4});
  int64_t now = 0;
  InspectorStart announced;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    const std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    (void)LooksLikeInspectorJson(line);
    (void)FeedStartLine(line, &announced);
    InspectorOp op;
    const LineKind kind = ParseJsonLine(line, &op);
    if (kind == LineKind::kOp || kind == LineKind::kOpOtherVersion) {
      Check(op);
      table.Add(op, ++now);
    }
  }
  for (const InspectorOp& op : ParsePromText(text).ops) {
    Check(op);
    table.Add(op, ++now);
  }
  (void)announced.EffectiveIntervalUs();
  (void)announced.DumpDir();
  if (announced.settings.size() > 64) std::abort();
  if (table.comms().size() > 4) std::abort();
  for (const auto& [id, comm] : table.comms()) {
    if (comm.ops.size() > 4) std::abort();
  }
  return 0;
}
