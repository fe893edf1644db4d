// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "efawatch/v1/agent.pb.h"
#include "probes/collective/types.h"

// The collective probe's records to and from the API's messages: one function each way per
// record, shared by the agent's gRPC edge (server and agent-to-agent client) and the CLI.
// tests/unit/records checks that every field crosses.
namespace efawatch::codec {

v1::CollectiveOp ToProto(collective::Op op);
collective::Op FromProto(v1::CollectiveOp op);
v1::CollectiveBackend ToProto(collective::Backend b);
collective::Backend FromProto(v1::CollectiveBackend b);

void ToProto(const collective::RunRequest& r, v1::RunCollectiveRequest* out);
collective::RunRequest FromProto(const v1::RunCollectiveRequest& in);
void ToProto(const collective::JoinRequest& r, v1::JoinCollectiveRequest* out);
collective::JoinRequest FromProto(const v1::JoinCollectiveRequest& in);
void ToProto(const collective::JoinResponse& r, v1::JoinCollectiveResponse* out);
collective::JoinResponse FromProto(const v1::JoinCollectiveResponse& in);
void ToProto(const collective::StartRequest& r, v1::StartCollectiveRequest* out);
collective::StartRequest FromProto(const v1::StartCollectiveRequest& in);
void ToProto(const collective::AbortRequest& r, v1::AbortCollectiveRequest* out);
collective::AbortRequest FromProto(const v1::AbortCollectiveRequest& in);
/// The rank's NCCL observation crosses whole (its verdict as v1.NcclVerdict).
void ToProto(const collective::RankResult& r, v1::RankResult* out);
collective::RankResult FromProto(const v1::RankResult& in);
void ToProto(const collective::Result& r, v1::CollectiveResult* out);
collective::Result FromProto(const v1::CollectiveResult& in);

}  // namespace efawatch::codec
