// SPDX-License-Identifier: Apache-2.0
// efawatch-admission: the validating admission webhook (`efawatch admission`, which execs this
// binary installed beside it). It lives in the daemon tier because it serves HTTPS with the
// agent's own server and certificate watcher (daemon/export, daemon/tls); the CLI tier may not
// link them. Parse the flags, serve, wait for SIGTERM/SIGINT, stop.
#include <CLI/CLI.hpp>
#include <csignal>
#include <iostream>
#include <memory>
#include <set>
#include <string>

#include "absl/strings/str_split.h"
#include "daemon/admission/webhook.h"
#include "daemon/export/family_sink.h"
#include "daemon/export/http_server.h"
#include "daemon/tls/cert_watcher.h"
#include "efawatch/version.h"
#include "lib/common/process_collector.h"
#include "spdlog/spdlog.h"

namespace {

struct Flags {
  std::string listen = ":8443";
  std::string tls_cert, tls_key;
  bool enforce = false;
  std::string exempt = "kube-system,efawatch";
  size_t max_body_bytes = 3u << 20;
  unsigned threads = 4;
  int64_t tls_reload_interval_ms = 10000;
};

// 0: parsed; 1: --help or --version was answered; 2: a bad flag (one line on stderr).
int Parse(int argc, char** argv, Flags* f) {
  CLI::App app{
      "efawatch admission: a validating admission webhook that warns about (or, with --enforce "
      "or the namespace label efawatch.io/enforce=true, denies) pods whose settings keep NCCL "
      "off the EFA fabric (docs/admission.md)"};
  app.name("efawatch admission");
  app.set_version_flag("--version", std::string("efawatch admission ") + EFAWATCH_VERSION + " (" +
                                        EFAWATCH_REVISION + ")");
  app.add_option("--listen", f->listen, "host:port to serve HTTPS on")->capture_default_str();
  app.add_option("--tls-cert", f->tls_cert, "PEM certificate (chain); reloaded when it changes")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", f->tls_key, "PEM private key of --tls-cert")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_flag("--enforce", f->enforce,
               "deny pods that break a rule, in every namespace (default: allow with warnings)");
  app.add_option("--exempt-namespaces", f->exempt,
                 "comma-separated namespaces whose pods are never judged")
      ->capture_default_str();
  app.add_option("--max-body-bytes", f->max_body_bytes,
                 "largest AdmissionReview accepted (413 above): twice etcd's 1.5 MiB object bound "
                 "covers an UPDATE's object and oldObject")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1024}, size_t{64} << 20));
  app.add_option("--threads", f->threads, "threads answering reviews")
      ->capture_default_str()
      ->check(CLI::Range(1u, 64u));
  app.add_option("--tls-reload-interval-ms", f->tls_reload_interval_ms,
                 "how often the certificate files are checked for a replacement")
      ->capture_default_str()
      ->check(CLI::Range(int64_t{100}, int64_t{3600000}));
  try {
    // argv[0] is "efawatch-admission" or, exec'd by efawatch, still "efawatch"; argv[1] may be
    // the subcommand's name.
    int skip = argc > 1 && std::string(argv[1]) == "admission" ? 1 : 0;
    app.parse(argc - skip, argv + skip);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" of exit code 0: CLI11 prints them.
    if (e.get_exit_code() == 0) {
      app.exit(e);
      return 1;
    }
    std::cerr << "efawatch admission: " << e.what() << "\n";
    return 2;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  Flags flags;
  if (const int rc = Parse(argc, argv, &flags); rc != 0) return rc == 1 ? 0 : rc;
  using namespace efawatch;  // NOLINT(google-build-using-namespace): main only

  admission::Policy policy{.enforce = flags.enforce, .exempt_namespaces = {}};
  for (absl::string_view ns : absl::StrSplit(flags.exempt, ',', absl::SkipWhitespace())) {
    policy.exempt_namespaces.emplace(ns);
  }
  admission::Webhook webhook(policy);
  common::ProcessCollector process;
  auto certs = tls::CertificateWatcher::Create(
      {{"admission", flags.tls_cert, flags.tls_key}},
      std::chrono::milliseconds(flags.tls_reload_interval_ms), common::SystemClock::Get(), nullptr);
  if (!certs.ok()) {
    std::cerr << "efawatch admission: " << certs.status().message() << "\n";
    return 2;
  }
  const auto ok = [](const exporter::HttpRequest&) {
    return exporter::HttpResponse::Text(200, "ok\n");
  };
  exporter::HttpServerOptions o;
  o.listen = flags.listen;
  o.cert_file = flags.tls_cert;
  o.key_file = flags.tls_key;
  o.threads = flags.threads;
  o.post_paths = {admission::Webhook::kPath, admission::Webhook::kEnforcePath};
  o.max_body_bytes = flags.max_body_bytes;
  // The API servers are the only clients (the NetworkPolicy admits nobody else), and one of
  // them may hold many connections: no per-peer bound below the total.
  o.limits.per_peer = o.limits.total;
  common::Collector* cert_collector = certs->get();
  auto server = exporter::HttpServer::Create(
      o, {{admission::Webhook::kPath,
           [&](const exporter::HttpRequest& r) { return webhook.Handle(r); }},
          {admission::Webhook::kEnforcePath,
           [&](const exporter::HttpRequest& r) { return webhook.Handle(r); }},
          {"/healthz", ok},
          {"/readyz", ok},
          {"/metrics", [&](const exporter::HttpRequest&) {
             exporter::HttpResponse r;
             r.content_type = "text/plain; version=0.0.4; charset=utf-8";
             r.body = exporter::RenderCollectors(
                 {&webhook, cert_collector, &process},
                 std::chrono::steady_clock::now() + std::chrono::seconds(1));
             return r;
           }}});
  if (!server.ok()) {
    std::cerr << "efawatch admission: " << server.status().message() << "\n";
    return 2;
  }
  webhook.CountTooLargeOf(&(*server)->counters());
  exporter::HttpServer* s = server->get();
  (*certs)->OnChange("admission", [s] {
    if (auto st = s->ReloadTls(); !st.ok()) {
      spdlog::warn("admission: certificate reload failed, the previous one stays: {}",
                   std::string(st.message()));
    } else {
      spdlog::info("admission: serving the renewed certificate");
    }
  });
  spdlog::info("admission: serving AdmissionReview v1 on https://{}/validate-pods (port {}), {}",
               flags.listen, (*server)->port(), flags.enforce ? "enforcing" : "warning");
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: stopping", sig);
  certs->reset();  // no reload into a server that is going
  server->reset();
  return 0;
}
