// SPDX-License-Identifier: Apache-2.0
#include "daemon/tls/cert_watcher.h"

#include <condition_variable>

#include "absl/strings/str_cat.h"
#include "daemon/tls/gnutls_api.h"
#include "lib/common/metric_table.h"
#include "lib/common/read_file.h"
#include "spdlog/spdlog.h"

namespace efawatch::tls {

absl::StatusOr<std::chrono::system_clock::time_point> CheckPem(const std::string& pem,
                                                               const std::string& key_pem) {
  auto loaded = GnutlsApi::Get();
  if (!loaded.ok()) return loaded.status();
  const GnutlsApi& g = **loaded;
  gnutls_x509_crt_t* list = nullptr;
  unsigned int n = 0;
  const gnutls_datum_t data = Datum(pem);
  if (const int rc = g.crt_list_import2(&list, &n, &data, GNUTLS_X509_FMT_PEM, 0);
      rc < 0 || n == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("no PEM certificate (", rc < 0 ? g.strerror(rc) : "empty", ")"));
  }
  time_t earliest = g.crt_get_expiration_time(list[0]);
  for (unsigned int i = 0; i < n; ++i) {
    earliest = std::min(earliest, g.crt_get_expiration_time(list[i]));
    g.crt_deinit(list[i]);
  }
  (*g.free)(list);
  if (!key_pem.empty()) {
    gnutls_certificate_credentials_t cred = nullptr;
    if (g.allocate_credentials(&cred) < 0) {
      return absl::ResourceExhaustedError("GnuTLS: cannot allocate credentials");
    }
    const gnutls_datum_t c = Datum(pem), k = Datum(key_pem);
    const int rc = g.set_x509_key_mem(cred, &c, &k, GNUTLS_X509_FMT_PEM);
    g.free_credentials(cred);
    if (rc < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("certificate and key do not go together (", g.strerror(rc), ")"));
    }
  }
  return std::chrono::system_clock::from_time_t(earliest);
}

absl::StatusOr<std::unique_ptr<CertificateWatcher>> CertificateWatcher::Create(
    std::vector<WatchedFiles> files, std::chrono::milliseconds interval, const common::Clock& clock,
    common::FindingsBoard* findings) {
  std::unique_ptr<CertificateWatcher> w(new CertificateWatcher(clock, findings));
  for (auto& f : files) {
    Entry e{.files = std::move(f), .last_bytes = {}, .state = {}, .listeners = {}};
    w->Read(e);
    if (!e.state.problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(e.files.cert_file, ": ", e.state.problem));
    }
    w->entries_.push_back(std::move(e));
  }
  w->PublishFindings();
  w->thread_ = std::jthread([self = w.get(), interval](const std::stop_token& stop) {
    std::mutex mu;
    std::condition_variable_any cv;
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, stop, interval, [&stop] { return stop.stop_requested(); })) {
      self->Check();
    }
  });
  return w;
}

CertificateWatcher::~CertificateWatcher() {
  thread_ = {};  // stops and joins before the entries go
}

void CertificateWatcher::OnChange(const std::string& use, const std::function<void()>& listener) {
  std::lock_guard lock(mu_);
  for (auto& e : entries_) {
    if (e.files.use == use) e.listeners.push_back(listener);
  }
}

bool CertificateWatcher::Read(Entry& e) {
  auto cert = common::ReadWholeFile(e.files.cert_file);
  absl::StatusOr<std::string> key = std::string();
  if (!e.files.key_file.empty()) key = common::ReadWholeFile(e.files.key_file);
  const std::string bytes =
      absl::StrCat(cert.ok() ? *cert : "", "\n--key--\n", key.ok() ? *key : "");
  if (bytes == e.last_bytes) return false;
  e.last_bytes = bytes;
  absl::StatusOr<std::chrono::system_clock::time_point> end =
      !cert.ok()  ? absl::StatusOr<std::chrono::system_clock::time_point>(cert.status())
      : !key.ok() ? absl::StatusOr<std::chrono::system_clock::time_point>(key.status())
                  : CheckPem(*cert, *key);
  if (!end.ok()) {
    // Half of a swap done by hand (the certificate written, not yet its key) also lands here;
    // the next read, once both are in, succeeds.
    ++e.state.reload_failures;
    e.state.problem = std::string(end.status().message());
    spdlog::warn(
        "tls {}: the files changed but cannot be used ({}); still using the previous "
        "ones",
        e.files.use, e.state.problem);
    return false;
  }
  const bool first = !e.state.not_after.has_value();
  e.state.not_after = *end;
  e.state.problem.clear();
  if (!first) spdlog::info("tls {}: new certificate files in use", e.files.use);
  return !first;
}

void CertificateWatcher::Check() {
  std::vector<std::function<void()>> due;
  {
    std::lock_guard lock(mu_);
    for (auto& e : entries_) {
      if (Read(e)) due.insert(due.end(), e.listeners.begin(), e.listeners.end());
    }
  }
  for (auto& listener : due) listener();  // outside the lock: a listener may take its time
  PublishFindings();
}

std::optional<CertificateState> CertificateWatcher::State(const std::string& use) const {
  std::lock_guard lock(mu_);
  for (const auto& e : entries_) {
    if (e.files.use == use) return e.state;
  }
  return std::nullopt;
}

void CertificateWatcher::PublishFindings() {
  if (findings_ == nullptr) return;
  std::vector<common::Finding> out;
  {
    std::lock_guard lock(mu_);
    const auto now = clock_.WallNow();
    for (const auto& e : entries_) {
      if (!e.state.not_after || *e.state.not_after > now) continue;
      common::Finding f;
      f.kind = KindName(common::FindingKind::kTlsCertificateExpired);
      f.severity = common::Severity::kCritical;
      f.subject = e.files.use;
      f.message = absl::StrCat("the ", e.files.use, " certificate in ", e.files.cert_file,
                               " has expired: peers and clients refuse it until it is renewed");
      f.evidence.source = e.files.cert_file;
      out.push_back(std::move(f));
    }
  }
  findings_->Publish("tls", std::move(out));
}

absl::Status CertificateWatcher::Collect(std::chrono::steady_clock::time_point /*deadline*/,
                                         common::MetricSink& sink) {
  std::lock_guard lock(mu_);
  for (const auto& e : entries_) {
    if (e.state.not_after) {
      sink.Add(metrics::M::kTlsCertificateExpiryTimestampSeconds, {{"use", e.files.use}},
               std::chrono::duration<double>(e.state.not_after->time_since_epoch()).count());
    }
    sink.Add(metrics::M::kTlsReloadFailuresTotal, {{"use", e.files.use}},
             static_cast<double>(e.state.reload_failures));
    sink.Add(metrics::M::kTlsReloadFailing, {{"use", e.files.use}},
             e.state.problem.empty() ? 0 : 1);
  }
  return absl::OkStatus();
}

}  // namespace efawatch::tls
