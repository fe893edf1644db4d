// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stop_token>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "lib/common/clock.h"
#include "lib/common/collector.h"
#include "lib/common/findings_board.h"

namespace efawatch::tls {

/// One set of PEM files the agent uses, by what it is used for: "server" (gRPC's certificate),
/// "client" (what this agent presents to peers), "ca" (the client CA bundle), "metrics" (the
/// metrics port's certificate). A CA bundle has only cert_file.
struct WatchedFiles {
  std::string use;
  std::string cert_file;
  std::string key_file;  // empty for a CA bundle
};

/// What one set held at its last good read.
struct CertificateState {
  std::optional<std::chrono::system_clock::time_point> not_after;  // the earliest in the file
  uint64_t reload_failures = 0;  // reads since start whose files were unusable
  std::string problem;           // the latest failure, empty once a read succeeds
};

/// Reads the files now and every `interval` after, from its own thread. Kubelet replaces a
/// Secret volume's files at once (an atomic swap of the `..data` link), cert-manager without
/// asking: a set whose bytes changed is checked (PEM parses, the key matches the certificate)
/// and, when good, its listeners are called on the watcher's thread, so a server can start
/// using it; when bad, the failure is counted and logged once per change and the old files stay
/// in use. gRPC reads its own copies through its file-watching certificate provider on the same
/// period, so both see the same files. Exports efawatch_tls_certificate_expiry_timestamp_seconds
/// and efawatch_tls_reload_failures_total per use, and publishes a critical
/// `tls_certificate_expired` finding for a set past its end. Thread-safe.
class CertificateWatcher final : public common::Collector {
 public:
  /// InvalidArgument when a set is unusable at start (the agent must not start on it).
  static absl::StatusOr<std::unique_ptr<CertificateWatcher>> Create(
      std::vector<WatchedFiles> files, std::chrono::milliseconds interval,
      const common::Clock& clock, common::FindingsBoard* findings);
  ~CertificateWatcher() override;

  /// Calls `listener` after `use`'s files changed and passed the checks. Register before the
  /// first change is likely (right after Create).
  void OnChange(const std::string& use, const std::function<void()>& listener);
  /// Reads every set once now (the thread does this every interval).
  void Check();
  std::optional<CertificateState> State(const std::string& use) const;

  std::string_view Name() const override { return "tls"; }
  absl::Status Collect(std::chrono::steady_clock::time_point deadline,
                       common::MetricSink& sink) override;

 private:
  struct Entry {
    WatchedFiles files;
    std::string last_bytes;  // what the latest read saw, good or bad
    CertificateState state;
    std::vector<std::function<void()>> listeners;
  };
  CertificateWatcher(const common::Clock& clock, common::FindingsBoard* findings)
      : clock_(clock), findings_(findings) {}
  // Reads one set; true when it changed and is good (listeners are due).
  bool Read(Entry& e);
  void PublishFindings();

  const common::Clock& clock_;
  common::FindingsBoard* const findings_;
  mutable std::mutex mu_;
  std::vector<Entry> entries_;  // guarded by mu_
  std::jthread thread_;
};

/// The end of validity of the earliest certificate in `pem`; InvalidArgument when it holds
/// none. With `key_pem`, also that the key matches the first certificate.
absl::StatusOr<std::chrono::system_clock::time_point> CheckPem(const std::string& pem,
                                                               const std::string& key_pem);

}  // namespace efawatch::tls
