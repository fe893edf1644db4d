// SPDX-License-Identifier: Apache-2.0
// The findings of a snapshot: per process, judged in its scope (TCP fallback, loopback, plugin,
// GPUDirect, errors), and per source (launcher settings, framework errors).

#include <string>
#include <vector>

#include "lib/nccl/snapshot_parts.h"
#include "lib/nccl/text_util.h"

namespace efawatch::nccl::internal {

Evidence ToEvidence(const State& st, const Ev& ev) {
  Evidence e;
  if (!ev.set()) return e;
  e.source = st.sources[ev.source]->name;
  e.line = ev.line;
  e.text = ev.text;
  return e;
}

namespace {

// Appended to the findings that a proof of several nodes would make certain.
constexpr char kSuspected[] = "suspected: this log does not show how many nodes the job spans";
// Ends a TCP fallback's message when the job asked for sockets (Finding::by_configuration).
constexpr char kByConfiguration[] = "; by configuration (NCCL_IB_DISABLE=1 or NCCL_NET=Socket)";

// NCCL_IB_DISABLE=1 / NCCL_NET=Socket anywhere in the scope: the job asked for sockets.
bool Deliberate(const Scope& s) {
  for (const Derived* d : s.procs) {
    if (d->p->ev_ib_disable.set()) return true;
  }
  for (const SourceState* ss : s.sources) {
    if (ss->ev_launcher_ib_disable.set()) return true;
  }
  return false;
}

struct Builder {
  const State& st;
  std::vector<Finding>* out;

  Finding& Add(std::string_view kind, Severity sev, const ProcState* p, std::string message,
               uint64_t count, const Ev& ev) {
    Finding f;
    f.kind = kind;
    f.severity = sev;
    if (p != nullptr) {
      f.host = p->host;
      f.pid = p->pid;
    }
    f.message = std::move(message);
    f.count = count;
    f.evidence = ToEvidence(st, ev);
    return out->emplace_back(std::move(f));
  }

  void AddTally(std::string_view kind, Severity sev, const ProcState* p, const std::string& message,
                const Tally& t) {
    if (t.count > 0) Add(kind, sev, p, message, t.count, t.first);
  }
};

// TCP fallback and loopback misuse, each three ways: certain when the job is proven to span
// nodes, suspected when the log does not show how many it spans, nothing on one proven node.
void TransportFindings(const Scope& s, const Derived& d, Builder* b) {
  const ProcState& p = *d.p;
  // TCP fallback: a TCP net is selected. Certain when the job is proven to span nodes,
  // suspected when the log does not show how many it spans, nothing on one proven node.
  if (d.tcp && !s.single()) {
    bool deliberate = Deliberate(s);
    std::string what = d.family == "OFI" ? "aws-ofi-nccl runs on the libfabric '" + d.provider +
                                               "' provider (TCP/UDP), not EFA"
                                         : "inter-node traffic uses NCCL's Socket transport (TCP)";
    if (deliberate) what += kByConfiguration;
    if (!s.multi()) what += std::string("; ") + kSuspected;
    Finding& f = b->Add(
        kTcpFallback, deliberate || !s.multi() ? Severity::kWarning : Severity::kCritical, &p, what,
        1, FirstSet({&p.ev_socket_channel, &p.ev_network, &p.ev_provider, &p.ev_socket_using}));
    f.by_configuration = deliberate;
    f.suspected = !s.multi();
  }
  // Loopback: the same three ways, for a bootstrap or Socket transport on lo / 127.x.
  if (p.boot_loopback && !s.single()) {
    b->Add(kLoopbackMisuse, s.multi() ? Severity::kCritical : Severity::kWarning, &p,
           s.multi() ? "multi-node job bootstraps over the loopback interface " + p.boot_if + " (" +
                           p.boot_addr + "): other nodes cannot reach it"
                     : "the job bootstraps over the loopback interface " + p.boot_if + " (" +
                           p.boot_addr + "), which other nodes cannot reach; " + kSuspected,
           1, p.ev_bootstrap)
        .suspected = !s.multi();
  } else if (p.socket_lists_loopback && d.tcp && !s.single()) {
    b->Add(kLoopbackMisuse, s.multi() ? Severity::kCritical : Severity::kWarning, &p,
           s.multi()
               ? std::string(
                     "multi-node job lists the loopback interface for NCCL's Socket transport")
               : std::string("NCCL's Socket transport lists the loopback interface; ") + kSuspected,
           1, p.ev_socket_using)
        .suspected = !s.multi();
  } else if (p.ev_ifname.set()) {
    b->Add(kLoopbackMisuse, Severity::kWarning, &p,
           "NCCL_SOCKET_IFNAME selects the loopback interface (by configuration); only a "
           "single-node job can work",
           1, p.ev_ifname);
  }
}

void PluginFindings(const Scope& s, const Derived& d, const SourceState& ss, Builder* b) {
  const ProcState& p = *d.p;
  // Net plugin.
  bool external_loaded = p.plugin_loaded && !p.plugin_init_failed;
  if (p.plugin_init_failed) {
    b->Add(kNetPluginMissing, Severity::kWarning, &p,
           "the network plugin " +
               (!p.failed_plugin.empty()     ? p.failed_plugin
                : !p.plugin_name.empty()     ? p.plugin_name
                : !p.ofi_plugin_name.empty() ? p.ofi_plugin_name
                : p.ofi_seen                 ? std::string("aws-ofi-nccl")
                                             : std::string("(unnamed)")) +
               " failed to initialize; NCCL falls back to an internal transport" +
               (ss.ev_efa_empty.set() ? " (libfabric lists no EFA device)" : ""),
           p.plugin_failures.count, p.plugin_failures.first);
  } else if (!external_loaded && (p.plugin_abi_mismatch || p.plugin_not_found)) {
    bool harmful = d.tcp && !s.single();
    std::string why = p.plugin_abi_mismatch
                          ? "a libnccl-net.so was found but exports no usable ncclNetPlugin symbol"
                          : "no external network plugin (libnccl-net.so) was found";
    if (harmful) {
      why += "; NCCL fell back to TCP sockets between nodes";
      if (!s.multi()) why += std::string(" (") + kSuspected + ")";
    } else if (d.family == "IB") {
      why += "; normal here: NCCL's internal IB transport is used";
    } else {
      why += "; harmless without inter-node traffic";
    }
    b->Add(kNetPluginMissing, harmful ? Severity::kWarning : Severity::kInfo, &p, why, 1,
           p.ev_plugin)
        .suspected = harmful && !s.multi();
  }
}

void GdrAndErrorFindings(const Derived& d, const SourceState& ss, Builder* b) {
  const ProcState& p = *d.p;
  // GDR.
  if ((d.family == "IB" || d.family == "OFI") && !d.tcp && (d.gdr == "off" || d.gdr == "partial")) {
    bool hardware = d.hmem_needs_rdma && p.gdr_off.count == 0;
    const Ev& ev = p.gdr_off.first.set() ? p.gdr_off.first : ss.ev_hmem;
    b->Add(kGdrDisabled, hardware ? Severity::kInfo : Severity::kWarning, &p,
           hardware ? "the EFA device cannot do RDMA, so GPUDirect RDMA is impossible here"
                    : "NET transport " + d.network + " runs without GPUDirect RDMA (" + d.gdr +
                          "): data is staged through host memory",
           std::max<uint64_t>(p.gdr_off.count, 1), ev);
  }
  b->AddTally(kNcclWarning, Severity::kWarning, &p, "NCCL WARN lines", p.warns);
  b->AddTally(kNcclError, Severity::kWarning, &p, "NCCL error return chains (file:line -> code)",
              p.error_chains);
  b->AddTally(kCommAbort, Severity::kCritical, &p, "a communicator was aborted", p.aborts);
  b->AddTally(kNetCompletionError, Severity::kCritical, &p,
              "the NET transport reported failed work completions (link, fabric or GDR problem)",
              p.completions);
  b->AddTally(kConnectionFailure, Severity::kWarning, &p,
              "socket connections between ranks failed or were closed", p.connect_failures);
}

void ProcessFindings(const State& st, const Scope& s, const Derived& d, Builder* b) {
  const SourceState& ss = *st.sources[d.p->source];
  TransportFindings(s, d, b);
  PluginFindings(s, d, ss, b);
  GdrAndErrorFindings(d, ss, b);
}

void SourceFindings(const SourceState& ss, Builder* b) {
  if (ss.ev_launcher_ifname.set()) {
    b->Add(kLoopbackMisuse, Severity::kWarning, nullptr,
           "the launcher sets NCCL_SOCKET_IFNAME to the loopback interface", 1,
           ss.ev_launcher_ifname);
  }
  b->AddTally(kCollectiveTimeout, Severity::kCritical, nullptr,
              "the PyTorch NCCL watchdog timed out a collective", ss.watchdog);
  b->AddTally(kNcclError, Severity::kCritical, nullptr, "the framework reported an NCCL failure",
              ss.framework_errors);
}

}  // namespace

void AddFindings(const State& st, std::map<int, Scope>& scopes, const std::vector<Derived>& derived,
                 std::vector<Finding>* out) {
  Builder b{st, out};
  for (const Derived& d : derived) ProcessFindings(st, scopes[d.scope], d, &b);
  for (const auto& ss : st.sources) SourceFindings(*ss, &b);
}

}  // namespace efawatch::nccl::internal
