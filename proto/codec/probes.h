// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "efawatch/v1/agent.pb.h"
#include "probes/fabric/probe.h"

// The fabric probes' records across the API: one function each way per record, shared by the
// agent's gRPC edge and tests/unit/records, which fails when a record gains a field that is
// neither mapped here nor listed there as agent-only.
namespace efawatch::codec {

/// The printable address and the FabricInfo fields peers need (provider, fabric, domain, rma);
/// the raw address is set by the caller where it has one.
void ToProto(const fabric::FabricInfo& info, const std::string& printable, v1::FabricAddress* out);

void ToProto(const fabric::PingResult& r, v1::PingResponse* out);
/// Agent-only fields (late, rtt_us, timed_loop and FabricInfo's local details) read as defaults.
fabric::PingResult FromProto(const v1::PingResponse& in);

void ToProto(const fabric::BandwidthResult& r, v1::BandwidthResponse* out);
fabric::BandwidthResult FromProto(const v1::BandwidthResponse& in);

/// Request fields left 0 mean "the default": the options' own. The peer and the endpoint are the
/// caller's (a lookup, the agent's configuration), not the request's.
fabric::PingOptions FromProto(const v1::PingRequest& in);
fabric::BandwidthOptions FromProto(const v1::BandwidthRequest& in);

}  // namespace efawatch::codec
