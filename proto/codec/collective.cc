// SPDX-License-Identifier: Apache-2.0
#include "proto/codec/collective.h"

#include <utility>

#include "proto/codec/records.h"

namespace efawatch::codec {
namespace {

using collective::Backend;
using collective::Op;

template <typename T>
std::vector<T> Vec(const google::protobuf::RepeatedField<T>& f) {
  return {f.begin(), f.end()};
}
std::vector<std::string> Vec(const google::protobuf::RepeatedPtrField<std::string>& f) {
  return {f.begin(), f.end()};
}

void ToProto(const collective::SizeTiming& t, v1::SizeTiming* out) {
  out->set_size(t.size);
  out->set_time_us(t.time_us);
  out->set_wrong(t.wrong);
}

collective::SizeTiming FromProto(const v1::SizeTiming& in) {
  return {.size = in.size(), .time_us = in.time_us(), .wrong = in.wrong()};
}

void ToProto(const collective::NcclObservation& o, v1::NcclObservation* out) {
  out->set_log_file(o.log_file);
  codec::ToProto(o.verdict, out->mutable_verdict());
  for (const auto& k : o.findings) out->add_findings(k);
}

collective::NcclObservation FromProto(const v1::NcclObservation& in) {
  collective::NcclObservation o;
  o.log_file = in.log_file();
  o.verdict = codec::FromProto(in.verdict());
  o.findings = Vec(in.findings());
  return o;
}

void ToProto(const collective::Row& r, v1::CollectiveRow* out) {
  out->set_size(r.size);
  out->set_count(r.count);
  out->set_time_us(r.time_us);
  out->set_algbw_gbps(r.algbw_gbps);
  out->set_busbw_gbps(r.busbw_gbps);
  out->set_wrong(r.wrong);
}

collective::Row FromProto(const v1::CollectiveRow& in) {
  return {.size = in.size(),
          .count = in.count(),
          .time_us = in.time_us(),
          .algbw_gbps = in.algbw_gbps(),
          .busbw_gbps = in.busbw_gbps(),
          .wrong = in.wrong()};
}

// One row per value: both directions read the same table.
constexpr std::pair<Op, v1::CollectiveOp> kOps[] = {{Op::kAllReduce, v1::ALL_REDUCE},
                                                    {Op::kAllGather, v1::ALL_GATHER},
                                                    {Op::kReduceScatter, v1::REDUCE_SCATTER},
                                                    {Op::kBroadcast, v1::BROADCAST}};
constexpr std::pair<Backend, v1::CollectiveBackend> kBackends[] = {{Backend::kHost, v1::HOST},
                                                                   {Backend::kNccl, v1::NCCL}};

// The second of the row whose first is `key`, or `otherwise`; and the reverse.
template <typename A, typename B, size_t N>
B Forward(const std::pair<A, B> (&table)[N], A key, B otherwise) {
  for (const auto& [a, b] : table) {
    if (a == key) return b;
  }
  return otherwise;
}
template <typename A, typename B, size_t N>
A Backward(const std::pair<A, B> (&table)[N], B key, A otherwise) {
  for (const auto& [a, b] : table) {
    if (b == key) return a;
  }
  return otherwise;
}

}  // namespace

v1::CollectiveOp ToProto(Op op) { return Forward(kOps, op, v1::COLLECTIVE_OP_UNSPECIFIED); }
Op FromProto(v1::CollectiveOp op) { return Backward(kOps, op, Op::kUnspecified); }
v1::CollectiveBackend ToProto(Backend b) {
  return Forward(kBackends, b, v1::COLLECTIVE_BACKEND_UNSPECIFIED);
}
Backend FromProto(v1::CollectiveBackend b) { return Backward(kBackends, b, Backend::kUnspecified); }

namespace {

// What to run and for how long: the fields a run request and a join share, both directions.
template <typename Record, typename Proto>
void PlanToProto(const Record& r, Proto* out) {
  out->set_op(codec::ToProto(r.op));
  for (uint64_t s : r.sizes) out->add_sizes(s);
  out->set_backend(codec::ToProto(r.backend));
  out->set_warmup(r.warmup);
  out->set_iters(r.iters);
  out->set_deadline_ms(r.deadline_ms);
}

template <typename Record, typename Proto>
void PlanFromProto(const Proto& in, Record* r) {
  r->op = codec::FromProto(in.op());
  r->sizes = Vec(in.sizes());
  r->backend = codec::FromProto(in.backend());
  r->warmup = in.warmup();
  r->iters = in.iters();
  r->deadline_ms = in.deadline_ms();
}

}  // namespace

void ToProto(const collective::RunRequest& r, v1::RunCollectiveRequest* out) {
  for (const auto& p : r.participants) out->add_participants(p);
  PlanToProto(r, out);
}

collective::RunRequest FromProto(const v1::RunCollectiveRequest& in) {
  collective::RunRequest r;
  r.participants = Vec(in.participants());
  PlanFromProto(in, &r);
  return r;
}

void ToProto(const collective::JoinRequest& r, v1::JoinCollectiveRequest* out) {
  out->set_session(r.session);
  out->set_rank(r.rank);
  out->set_nranks(r.nranks);
  PlanToProto(r, out);
}

collective::JoinRequest FromProto(const v1::JoinCollectiveRequest& in) {
  collective::JoinRequest r;
  r.session = in.session();
  r.rank = in.rank();
  r.nranks = in.nranks();
  PlanFromProto(in, &r);
  return r;
}

void ToProto(const collective::JoinResponse& r, v1::JoinCollectiveResponse* out) {
  out->set_fabric_address(r.fabric_address);
  out->set_node_name(r.node_name);
  out->set_provider(r.provider);
  out->set_local_ranks(r.local_ranks);
  out->set_nccl_unique_id(r.nccl_unique_id);
}

collective::JoinResponse FromProto(const v1::JoinCollectiveResponse& in) {
  return {.fabric_address = in.fabric_address(),
          .node_name = in.node_name(),
          .provider = in.provider(),
          .local_ranks = in.local_ranks(),
          .nccl_unique_id = in.nccl_unique_id()};
}

void ToProto(const collective::StartRequest& r, v1::StartCollectiveRequest* out) {
  out->set_session(r.session);
  for (const auto& a : r.fabric_addresses) out->add_fabric_addresses(a);
  out->set_nccl_unique_id(r.nccl_unique_id);
  out->set_nranks(r.nranks);
  out->set_rank(r.rank);
}

collective::StartRequest FromProto(const v1::StartCollectiveRequest& in) {
  return {.session = in.session(),
          .fabric_addresses = Vec(in.fabric_addresses()),
          .nccl_unique_id = in.nccl_unique_id(),
          .nranks = in.nranks(),
          .rank = in.rank()};
}

void ToProto(const collective::AbortRequest& r, v1::AbortCollectiveRequest* out) {
  out->set_session(r.session);
  out->set_reason(r.reason);
}

collective::AbortRequest FromProto(const v1::AbortCollectiveRequest& in) {
  return {.session = in.session(), .reason = in.reason()};
}

void ToProto(const collective::RankResult& r, v1::RankResult* out) {
  out->set_rank(r.rank);
  out->set_node_name(r.node_name);
  for (const auto& t : r.timings) ToProto(t, out->add_timings());
  out->set_error(r.error);
  if (r.nccl) ToProto(*r.nccl, out->mutable_nccl());
  out->set_provider(r.provider);
}

collective::RankResult FromProto(const v1::RankResult& in) {
  collective::RankResult r;
  r.rank = in.rank();
  r.node_name = in.node_name();
  for (const auto& t : in.timings()) r.timings.push_back(FromProto(t));
  r.error = in.error();
  if (in.has_nccl()) r.nccl = FromProto(in.nccl());
  r.provider = in.provider();
  return r;
}

void ToProto(const collective::Result& r, v1::CollectiveResult* out) {
  out->set_op(codec::ToProto(r.op));
  out->set_backend(codec::ToProto(r.backend));
  out->set_nranks(r.nranks);
  for (const auto& n : r.nodes) out->add_nodes(n);
  for (const auto& row : r.rows) ToProto(row, out->add_rows());
  out->set_avg_busbw_gbps(r.avg_busbw_gbps);
  out->set_provider(r.provider);
  for (const auto& rank : r.ranks) ToProto(rank, out->add_ranks());
  out->set_elapsed_seconds(r.elapsed_seconds);
}

collective::Result FromProto(const v1::CollectiveResult& in) {
  collective::Result r;
  r.op = FromProto(in.op());
  r.backend = FromProto(in.backend());
  r.nranks = in.nranks();
  r.nodes = Vec(in.nodes());
  for (const auto& row : in.rows()) r.rows.push_back(FromProto(row));
  r.avg_busbw_gbps = in.avg_busbw_gbps();
  r.provider = in.provider();
  for (const auto& rank : in.ranks()) r.ranks.push_back(FromProto(rank));
  r.elapsed_seconds = in.elapsed_seconds();
  return r;
}

}  // namespace efawatch::codec
