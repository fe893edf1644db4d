// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "daemon/logs/pod_volumes.h"
#include "daemon/logs/source.h"
#include "daemon/logs/tailer.h"
#include "lib/common/clock.h"
#include "lib/common/collector.h"
#include "lib/inspector/record.h"
#include "lib/inspector/stats.h"
#include "lib/inspector/summary.h"

namespace efawatch::inspector {

struct InspectorCollectorOptions {
  /// Pod volumes (kubelet's pods directory) and the pod log root that names their pods.
  std::filesystem::path volume_root;
  std::filesystem::path pod_log_root;
  /// A hostPath the jobs write their Inspector files to (NCCL_INSPECTOR_DUMP_DIR), its files
  /// attributed to the pod whose name is the record's hostname (a pod's default host name).
  /// Empty: none.
  std::filesystem::path inspector_dir;
  size_t max_comms_per_pod = 32;  // --max-communicators-per-pod
  /// A communicator with no new operation for this long loses its series (torn down).
  std::chrono::seconds stale_after{900};
  /// The node's instance type and the network bandwidth it should give (bytes a second, 0:
  /// unknown): exported as efawatch_fabric_expected_bandwidth_bytes_per_second.
  std::string instance_type;
  double expected_bytes_per_second = 0;
  /// Prometheus-mode files are read whole when they change, at most this often, and only up to
  /// this size (the Inspector's are a few KiB per GPU; a larger one is skipped, counted).
  std::chrono::milliseconds prom_interval{2000};
  uint64_t max_prom_bytes = 1 << 20;
  /// A communicator whose newest progress is older than this is stale
  /// (--inspector-stale-after-seconds). Longer than any dump interval a job uses: Prometheus
  /// mode writes at most every 30 s, and only after ops completed.
  std::chrono::seconds progress_stale_after{600};
  /// A file caught mid-rewrite is read again up to this many times in one pass, this far apart.
  int torn_read_tries = 8;
  std::chrono::microseconds torn_read_pause{2000};
  /// Called on the tailer's thread with Summaries() when they changed, at most every
  /// prom_interval (the node-state board's publisher: GetNodeHealth reads them there).
  std::function<void(std::shared_ptr<const std::vector<CommSummary>>)> on_summaries;
};

/// The TailerOptions of the tailer that follows Inspector JSON Lines files for `collector`:
/// no container logs, no Ray worker files; pod volume files named *.log or *.jsonl at the
/// walker's depth whose first line is an Inspector record (Accept()), and *.log / *.jsonl in
/// --inspector-dir. Files are read from their tail on first sight (what runs now matters; a
/// day-old file holds gigabytes), within a read budget of their own.
logs::TailerOptions InspectorTailerOptions(const InspectorCollectorOptions& options,
                                           class InspectorCollector* collector);

/// Counts the NCCL Inspector's records per pod, communicator, collective and message-size
/// bucket (bounded: CommTable), and exports them at scrape time. Its LineSink side is called
/// on the tailer's thread (JSON Lines files); Prometheus-mode files are read from
/// OnPassComplete() on the same thread; Collect() runs on the scrape thread. Thread-safe: one
/// mutex guards the tables. Files it cannot read are counted, never fatal.
class InspectorCollector final : public logs::LineSink, public common::Collector {
 public:
  InspectorCollector(InspectorCollectorOptions options, const common::Clock& clock);

  // logs::LineSink
  void OnLine(const logs::LogSource& source, uint64_t line_no, std::string_view line) override;
  void OnLines(const logs::LogSource& source, uint64_t first_line_no, uint64_t count,
               std::string_view block) override;
  void OnSourceGone(const logs::LogSource& source) override;
  void OnPassComplete() override;

  // common::Collector
  std::string_view Name() const override { return "nccl_inspector"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

  /// For the volume walker: true when `file`'s first line (opened beneath `volume`) is an
  /// Inspector record. Remembered per file (inode and whether it had a first line yet), so a
  /// rescan reads nothing again.
  bool Accept(const std::filesystem::path& volume, const std::filesystem::path& file);

  /// Reads the Prometheus-mode files that changed since the last call (OnPassComplete calls it
  /// every prom_interval). For tests.
  void ReadPromFiles();

  /// Every communicator of every pod as Collect() would export it, by pod and communicator:
  /// for `efawatch status` (NodeHealth). Any thread.
  std::vector<CommSummary> Summaries();

 private:
  // The newest progress of one communicator of a pod (Unix time, microseconds).
  struct Progress {
    std::string comm_id, comm_name;
    int64_t unix_us = 0;
  };
  struct Pod {
    std::string namespace_name, pod;
    CommTable table;
    std::map<std::string, Progress> progress;  // by CommKey; kept while a source feeds the pod
    std::set<std::string> sources;             // paths feeding it
  };
  struct Source {
    bool decided = false, recognised = false;
    std::string pod_key;  // "" until its first record names it
  };
  struct PromTracked {
    uint64_t ino = 0, size = 0;
    int64_t mtime_ns = 0;
    std::string pod_key;
    std::map<std::string, int64_t> last_sn;  // comm/op/size -> newest sequence number counted
    // The text last counted: a rewrite that begins with it, moments later, is the rest of the
    // same dump (a read that caught the writer between two of its flushes), counted from there.
    std::string last_text;
  };
  // A settled read of a Prometheus-mode file: its whole text, stable across the read.
  enum class ReadResult { kOk, kTorn, kUnreadable, kTooBig };
  ReadResult ReadSettled(const std::filesystem::path& beneath, const std::filesystem::path& path,
                         std::string* text, struct stat* st);
  void NoteProgress(Pod& pod, const InspectorOp& op, int64_t unix_us);
  void Handle(const logs::LogSource& source, std::string_view line);
  // The pod an op of `source` belongs to: the source's own, else the pod whose name is the
  // record's hostname on this node, else none ("" namespace and pod).
  std::string PodFor(const logs::LogSource& source, const InspectorOp& op);
  // The key of the pod's entry, made when new.
  std::string PodEntry(const std::string& ns, const std::string& name);
  void AddOp(const std::string& pod_key, const std::string& path, const InspectorOp& op);
  void Forget(const std::string& path, const std::string& pod_key);
  void ReadPromFile(const std::filesystem::path& beneath, const std::filesystem::path& path,
                    const logs::LogSource* pod, std::set<std::string>& seen);
  int64_t NowNs() const;
  void PublishSummaries();

  const InspectorCollectorOptions options_;
  const common::Clock& clock_;
  std::mutex mu_;
  std::map<std::string, Pod> pods_;        // by "namespace/pod" ("/" for none)
  std::map<std::string, Source> sources_;  // JSON Lines files, by path
  std::map<std::string, PromTracked> prom_;
  std::map<std::string, std::pair<uint64_t, bool>> accepted_;  // path -> (inode, recognised)
  std::map<std::string, std::pair<std::string, std::string>> pods_by_name_;  // name -> (ns, pod)
  std::chrono::steady_clock::time_point next_prom_{};
  std::shared_ptr<const std::vector<CommSummary>> published_;  // tailer thread only
  std::chrono::steady_clock::time_point next_names_{};
  uint64_t ops_ = 0, other_version_ = 0, malformed_ = 0, dropped_ = 0, prom_ops_ = 0,
           prom_malformed_ = 0, prom_empty_ = 0, prom_torn_ = 0, prom_stale_ = 0;
};

}  // namespace efawatch::inspector
