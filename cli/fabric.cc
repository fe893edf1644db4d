// SPDX-License-Identifier: Apache-2.0
#include "cli/fabric.h"

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include <cstdio>
#include <optional>
#include <utility>

#include "probes/collective/ops.h"
#include "proto/codec/collective.h"
#include "proto/codec/records.h"

namespace efawatch::cli {
namespace {

std::string EndText(v1::ProbeEnd e) { return common::ProbeEndText(codec::FromProto(e)); }

std::string Json(const google::protobuf::Message& m) {
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.always_print_primitive_fields = true;
  opts.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(m, &json, opts);
  return json;
}

std::string Line(const char* fmt, auto... args) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

// Every probe RPC outlives its probe: the probe's own deadline plus the connection timeout
// (lookup of the peer and transport).
template <typename Request, typename Response, typename Call>
int Invoke(const char* name, const AgentConnection& conn, uint32_t deadline_ms,
           const Request& request, Response* response, Call call, std::ostream& err) {
  auto channel = MakeChannel(conn);
  if (!channel.ok()) {
    err << "efawatch " << name << ": " << channel.status().message() << "\n";
    return 2;
  }
  auto stub = v1::Agent::NewStub(*channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + conn.timeout +
                   std::chrono::milliseconds(deadline_ms));
  grpc::Status st = call(*stub, &ctx, request, response);
  if (!st.ok()) {
    err << "efawatch " << name << ": agent " << conn.address << ": " << st.error_message()
        << SecurityHint(st, conn) << "\n";
    return 1;
  }
  return 0;
}

// What ping and bandwidth share: the call, JSON or text (the fabric line, `body`, then how the
// probe ended) and the exit code (0 completed, 3 ended early, else Invoke's).
template <typename Request, typename Response, typename Call, typename Body>
int RunProbe(const char* name, const AgentConnection& conn, uint32_t deadline_ms,
             const Request& req, Call call, const std::string& format, std::ostream& out,
             std::ostream& err, Body body) {
  Response r;
  const int rc = Invoke(name, conn, deadline_ms, req, &r, call, err);
  if (rc != 0) return rc;
  if (format == "json") {
    out << Json(r) << "\n";
  } else {
    out << "fabric: " << r.local().provider() << " " << r.local().fabric() << " "
        << r.local().domain() << "\n";
    body(r);
    out << EndText(r.end()) << " in " << Line("%.2f s", r.elapsed_seconds())
        << (r.last_error().empty() ? "" : ", last error: " + r.last_error()) << "\n";
  }
  return r.end() == v1::PROBE_END_COMPLETED ? 0 : 3;
}

}  // namespace

int RunPing(const AgentConnection& conn, const PingArgs& args, const std::string& format,
            std::ostream& out, std::ostream& err) {
  v1::PingRequest req;
  req.set_peer_agent(args.peer);
  req.set_count(args.count);
  req.set_message_bytes(args.size);
  req.set_deadline_ms(args.deadline_ms);
  req.set_message_timeout_ms(args.timeout_ms);
  return RunProbe<v1::PingRequest, v1::PingResponse>(
      "ping", conn, args.deadline_ms, req,
      [](v1::Agent::Stub& s, grpc::ClientContext* c, const v1::PingRequest& q,
         v1::PingResponse* p) { return s.Ping(c, q, p); },
      format, out, err,
      [&](const v1::PingResponse& r) {
        out << "from " << r.local().printable() << " to " << r.peer() << "\n"
            << Line("%-8s %6s %6s %6s %6s %10s %10s %10s %10s %10s\n", "bytes", "sent", "recv",
                    "lost", "errors", "min us", "p50 us", "p90 us", "p99 us", "max us")
            << Line("%-8llu %6u %6u %6u %6u %10.1f %10.1f %10.1f %10.1f %10.1f\n",
                    static_cast<unsigned long long>(r.message_bytes()), r.sent(), r.received(),
                    r.lost(), r.errors(), r.rtt().min_us(), r.rtt().median_us(), r.rtt().p90_us(),
                    r.rtt().p99_us(), r.rtt().max_us())
            << "loss " << Line("%.1f%%", 100 * r.loss_ratio()) << ", ";
      });
}

int RunBandwidth(const AgentConnection& conn, const BandwidthArgs& args, const std::string& format,
                 std::ostream& out, std::ostream& err) {
  v1::BandwidthRequest req;
  req.set_peer_agent(args.peer);
  for (uint64_t s : args.sizes) req.add_sizes(s);
  req.set_bidirectional(args.bidirectional);
  req.set_rma(args.rma);
  req.set_window(args.window);
  req.set_ms_per_size(args.ms_per_size);
  req.set_deadline_ms(args.deadline_ms);
  return RunProbe<v1::BandwidthRequest, v1::BandwidthResponse>(
      "bandwidth", conn, args.deadline_ms, req,
      [](v1::Agent::Stub& s, grpc::ClientContext* c, const v1::BandwidthRequest& q,
         v1::BandwidthResponse* p) { return s.Bandwidth(c, q, p); },
      format, out, err,
      [&](const v1::BandwidthResponse& r) {
        out << "from " << r.local().printable() << " to " << r.peer() << ", "
            << (r.bidirectional() ? "bidirectional" : "unidirectional")
            << (r.rma() ? ", RMA write" : ", messages") << ", window " << r.window() << "\n"
            << Line("%-10s %10s %14s %10s %10s\n", "bytes", "messages", "total bytes", "seconds",
                    "GB/s");
        for (const auto& p : r.points()) {
          out << Line("%-10llu %10llu %14llu %10.3f %10.3f\n",
                      static_cast<unsigned long long>(p.message_bytes()),
                      static_cast<unsigned long long>(p.messages()),
                      static_cast<unsigned long long>(p.bytes()), p.seconds(),
                      p.gbytes_per_second());
        }
      });
}

namespace {

// The request the flags ask for, and its op; nothing (and a line on `err`) when a flag is invalid.
std::optional<std::pair<v1::RunCollectiveRequest, const collective::OpInfo*>> CollectiveRequest(
    const CollectiveArgs& args, std::ostream& err) {
  v1::RunCollectiveRequest req;
  for (const auto& a : args.agents) req.add_participants(a);
  const collective::OpInfo* op = collective::FindOp(args.op);
  if (op == nullptr) {
    err << "efawatch collective: --op must be one of " << collective::OpNames() << "\n";
    return std::nullopt;
  }
  req.set_op(codec::ToProto(op->op));
  auto sizes = collective::ParseSizes(args.sizes);
  if (!sizes.ok()) {
    err << "efawatch collective: --sizes: " << sizes.status().message() << "\n";
    return std::nullopt;
  }
  for (uint64_t s : *sizes) req.add_sizes(s);
  if (args.backend != "host" && args.backend != "nccl") {
    err << "efawatch collective: --backend must be host or nccl\n";
    return std::nullopt;
  }
  req.set_backend(args.backend == "nccl" ? v1::NCCL : v1::HOST);
  req.set_warmup(args.warmup);
  req.set_iters(args.iters);
  req.set_deadline_ms(args.deadline_ms);
  return std::make_pair(std::move(req), op);
}

// nccl-tests' table, the data check and each NCCL rank's transport, as text.
void PrintCollective(const v1::CollectiveResult& r, const collective::OpInfo& op,
                     const std::string& backend, uint64_t wrong, std::ostream& out) {
  std::string nodes;
  for (const auto& n : r.nodes()) nodes += (nodes.empty() ? "" : ", ") + n;
  out << "# " << op.name << ", backend " << backend << ", " << r.nranks() << " ranks on " << nodes
      << ", provider " << r.provider() << "\n"
      << Line("# %12s %12s %6s %10s %11s %11s %8s\n", "size(B)", "count", "type", "time(us)",
              "algbw(GB/s)", "busbw(GB/s)", "#wrong");
  for (const auto& row : r.rows()) {
    out << Line("  %12llu %12llu %6s %10.1f %11.3f %11.3f %8llu\n",
                static_cast<unsigned long long>(row.size()),
                static_cast<unsigned long long>(row.count()), "float", row.time_us(),
                row.algbw_gbps(), row.busbw_gbps(), static_cast<unsigned long long>(row.wrong()));
  }
  out << Line("# Avg bus bandwidth: %.3f GB/s\n", r.avg_busbw_gbps())
      << "# Data check: " << (wrong == 0 ? "OK" : "FAILED") << " (" << wrong
      << " wrong elements)\n";
  for (const auto& rank : r.ranks()) {
    if (!rank.has_nccl()) continue;
    const auto& n = rank.nccl();
    const nccl::Verdict v = codec::FromProto(n.verdict());
    out << "# rank " << rank.rank() << " (" << rank.node_name() << "): NCCL " << v.nccl_version
        << ", network " << v.network << ", transport " << v.transport << ", provider "
        << v.ofi_provider << "\n#   " << nccl::VerdictHeadline(v) << "\n";
  }
}

}  // namespace

int RunCollective(const AgentConnection& conn_in, const CollectiveArgs& args,
                  const std::string& format, std::ostream& out, std::ostream& err) {
  auto request = CollectiveRequest(args, err);
  if (!request) return 2;
  const auto& [req, op] = *request;
  AgentConnection conn = conn_in;
  if (conn.address.empty() && !args.agents.empty()) conn.address = args.agents.front();
  v1::CollectiveResult r;
  const int rc = Invoke(
      "collective", conn, args.deadline_ms, req, &r,
      [](v1::Agent::Stub& s, grpc::ClientContext* c, const v1::RunCollectiveRequest& q,
         v1::CollectiveResult* p) { return s.RunCollective(c, q, p); },
      err);
  if (rc != 0) return rc;
  uint64_t wrong = 0;
  bool fallback = false;
  for (const auto& row : r.rows()) wrong += row.wrong();
  for (const auto& rank : r.ranks()) {
    fallback =
        fallback || rank.nccl().verdict().tcp_fallback() || rank.nccl().verdict().loopback_misuse();
  }
  if (format == "json") {
    out << Json(r) << "\n";
  } else {
    PrintCollective(r, *op, args.backend, wrong, out);
  }
  return wrong > 0 || fallback ? 3 : 0;
}

}  // namespace efawatch::cli
