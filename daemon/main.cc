// SPDX-License-Identifier: Apache-2.0
// efawatchd: parse the configuration, build the App, wait for SIGTERM/SIGINT, stop.
#include <malloc.h>
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <iostream>

#include "daemon/app.h"
#include "daemon/config.h"
#include "daemon/logging.h"
#include "efawatch/version.h"
#include "lib/common/metric_table.h"
#include "spdlog/spdlog.h"

int main(int argc, char** argv) {
  // Block the stop signals before any thread exists, so every thread inherits the mask and
  // sigwait() below is the only place they are delivered.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  // Two malloc arenas, not glibc's eight per core: each thread that allocates would otherwise
  // get its own, and an idle agent's twenty threads kept about 0.2 MiB of arena pages resident
  // for nothing (its threads rarely allocate at once; docs/limits.md).
  mallopt(M_ARENA_MAX, 2);
  // A vanished scraper or gRPC peer must not kill the agent.
  std::signal(SIGPIPE, SIG_IGN);
  // Descriptors up to the hard limit, as Go programs do by default: the agent holds up to
  // --max-log-files open logs plus both ports' connections (each bounded, docs/limits.md), more
  // than a soft limit of 1,024 allows.
  if (rlimit r{}; getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }

  auto parsed = efawatch::ParseConfig({argv + 1, argv + argc}, efawatch::ProcessEnvironment());
  if (!parsed.ok()) {
    std::cerr << "efawatchd: " << parsed.status().message() << "\n";
    return 2;
  }
  switch (parsed->action) {
    case efawatch::Action::kHelp:
      std::cout << parsed->help_text;
      return 0;
    case efawatch::Action::kVersion:
      std::cout << "efawatchd " << EFAWATCH_VERSION << " (" << EFAWATCH_REVISION << ")\n";
      return 0;
    case efawatch::Action::kMetricsDoc:
      std::cout << efawatch::metrics::RenderMetricsDoc();
      return 0;
    case efawatch::Action::kRun:
      break;
  }
  efawatch::SetupLogging(parsed->config.log_format, parsed->config.log_level);

  auto app = efawatch::App::Create(parsed->config, efawatch::common::SystemClock::Get());
  if (!app.ok()) {
    std::cerr << "efawatchd: " << app.status().message() << "\n";
    return 2;
  }
  int sig = 0;
  sigwait(&stop_signals, &sig);
  spdlog::info("signal {}: stopping", sig);
  (*app)->Stop();
  app->reset();
  spdlog::info("stopped");
  return 0;
}
