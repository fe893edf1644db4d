#pragma once

#include "daemon/node_health.h"
#include "efawatch/v1/agent.pb.h"

// The agent's node snapshot across the API, one function each way; tests/unit/records round-trips
// it, so a field added to NodeHealth, CollectorState or PodVerdict fails there until mapped here.
namespace efawatch::rpc {

void ToProto(const common::NodeHealth& h, v1::NodeHealth* out);
common::NodeHealth FromProto(const v1::NodeHealth& in);

}  // namespace efawatch::rpc
