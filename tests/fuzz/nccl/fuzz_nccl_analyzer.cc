// SPDX-License-Identifier: Apache-2.0
// libFuzzer entry point: arbitrary bytes are split into lines and fed to an Analyzer with small
// bounds (so eviction and truncation paths run), then the report is built and rendered.
// The first byte picks the envelope and the bounds; seeds are tests/fixtures/nccl/*.log. The
// input is also cut in two and merged. The block path (FeedLines) has its own differential
// target, fuzz_block_scanner.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lib/nccl/analyzer.h"
#include "lib/nccl/record_scanner.h"
#include "lib/nccl/report_json.h"
#include "lib/nccl/unwrap.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace efawatch::nccl;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  uint8_t mode = size > 0 ? data[0] : 0;
  AnalyzerOptions options;
  options.envelope = static_cast<Envelope>(mode & 3);
  if (mode & 4) {
    options.max_processes = 3;
    options.max_comms_per_process = 2;
    options.max_line_bytes = 300;
    options.max_settings_per_process = 2;
    options.max_sources = 2;
  }
  options.group_by_source = (mode & 8) != 0;
  Analyzer analyzer(options);
  std::vector<Record> records;
  std::string scratch;
  std::string json_text;
  uint64_t line_no = 0;
  size_t start = 0;
  while (start <= input.size()) {
    size_t nl = input.find('\n', start);
    if (nl == std::string_view::npos) nl = input.size();
    std::string_view line = input.substr(start, nl - start);
    const char* source = (line_no % 3 == 0) ? "a.log" : "b.log";
    analyzer.Feed(source, ++line_no, line);
    // The building blocks on their own, too.
    FindRecords(CleanLine(line, &scratch), &records);
    bool partial = false;
    ParseDockerJson(line, &json_text, &partial);
    std::string_view v, cuda;
    FindVersionBanner(line, &v, &cuda);
    if (line_no % 64 == 0) analyzer.Snapshot();
    start = nl + 1;
  }
  Report report = analyzer.Snapshot();
  std::string out = ReportToJson(report).dump();
  (void)out;

  // The same input cut in two and merged (what `efawatch analyze` does on several cores).
  size_t cut = size > 1 ? (static_cast<size_t>(data[1]) * input.size()) / 256 : 0;
  cut = input.find('\n', cut);
  if (cut != std::string_view::npos) {
    Analyzer first(options), second(options);
    uint64_t n1 = 0, n2 = 0;
    for (std::string_view part : {input.substr(0, cut), input.substr(cut + 1)}) {
      Analyzer& a = n1 == 0 && part.data() == input.data() ? first : second;
      uint64_t& n = &a == &first ? n1 : n2;
      size_t b = 0;
      while (b <= part.size()) {
        size_t e = part.find('\n', b);
        if (e == std::string_view::npos) e = part.size();
        a.Feed("a.log", ++n, part.substr(b, e - b));
        b = e + 1;
      }
    }
    first.Merge(std::move(second), n1);
    out = ReportToJson(first.Snapshot()).dump();
  }

  return 0;
}
