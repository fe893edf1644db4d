// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lib/nccl/verdict.h"

// The collective probe's records: plain data, copyable, produced and consumed by the coordinator,
// the participant and the backends. The gRPC edge (proto/codec/collective.h) translates them to
// and from the API's messages; nothing here knows of protobuf.
namespace efawatch::collective {

enum class Op { kUnspecified, kAllReduce, kAllGather, kReduceScatter, kBroadcast };

enum class Backend {
  kUnspecified,
  kHost,  ///< Ring algorithms on host memory over libfabric; works everywhere.
  kNccl,  ///< NCCL on the node's GPUs (agents built with CUDA and NCCL).
};

/// What a caller asks the coordinating agent for. Zero values mean "the default" (Normalize).
struct RunRequest {
  std::vector<std::string> participants;  ///< host:port of each agent's gRPC edge; rank = position
  Op op = Op::kUnspecified;
  std::vector<uint64_t> sizes;  ///< Bytes (nccl-tests' S).
  Backend backend = Backend::kUnspecified;
  uint32_t warmup = 0;
  uint32_t iters = 0;
  uint32_t deadline_ms = 0;  ///< Whole probe.

  bool operator==(const RunRequest&) const = default;
};

/// The coordinator's invitation to one participant.
struct JoinRequest {
  std::string session;
  uint32_t rank = 0;  ///< First rank of this agent (NCCL: one rank per local GPU from here).
  uint32_t nranks = 0;
  Op op = Op::kUnspecified;
  std::vector<uint64_t> sizes;
  Backend backend = Backend::kUnspecified;
  uint32_t warmup = 0;
  uint32_t iters = 0;
  uint32_t deadline_ms = 0;  ///< Time left of the common deadline when sent.

  bool operator==(const JoinRequest&) const = default;
};

struct JoinResponse {
  std::string fabric_address;  ///< Host backend: this rank's raw endpoint address.
  std::string node_name;
  std::string provider;
  uint32_t local_ranks = 0;    ///< Ranks this agent runs (host: 1; NCCL: its GPUs).
  std::string nccl_unique_id;  ///< NCCL, from the agent holding rank 0.

  bool operator==(const JoinResponse&) const = default;
};

struct StartRequest {
  std::string session;
  std::vector<std::string> fabric_addresses;  ///< Host backend: every rank's endpoint, by rank.
  std::string nccl_unique_id;
  uint32_t nranks = 0;  ///< NCCL: total ranks once every agent said how many GPUs it has.
  uint32_t rank = 0;

  bool operator==(const StartRequest&) const = default;
};

struct AbortRequest {
  std::string session;
  std::string reason;

  bool operator==(const AbortRequest&) const = default;
};

/// One size on one rank.
struct SizeTiming {
  uint64_t size = 0;
  double time_us = 0;  ///< Mean per iteration.
  uint64_t wrong = 0;  ///< Elements that failed the data check.

  bool operator==(const SizeTiming&) const = default;
};

/// What NCCL itself said while the probe ran: its own NCCL_DEBUG=INFO log, analyzed into the
/// agent's verdict record.
struct NcclObservation {
  std::string log_file;
  nccl::Verdict verdict;
  std::vector<std::string> findings;  ///< Kinds, sorted, each once.

  bool operator==(const NcclObservation&) const = default;
};

struct RankResult {
  uint32_t rank = 0;
  std::string node_name;
  std::vector<SizeTiming> timings;
  std::string error;  ///< Empty when it completed.
  std::optional<NcclObservation> nccl;
  std::string provider;

  bool operator==(const RankResult&) const = default;
};

/// One row of nccl-tests' table.
struct Row {
  uint64_t size = 0;
  uint64_t count = 0;  ///< Elements per rank (float32).
  double time_us = 0;
  double algbw_gbps = 0;
  double busbw_gbps = 0;
  uint64_t wrong = 0;

  bool operator==(const Row&) const = default;
};

struct Result {
  Op op = Op::kUnspecified;
  Backend backend = Backend::kUnspecified;
  uint32_t nranks = 0;
  std::vector<std::string> nodes;  ///< By participant.
  std::vector<Row> rows;
  double avg_busbw_gbps = 0;
  std::string provider;  ///< Host backend: the libfabric provider the ranks used.
  std::vector<RankResult> ranks;
  double elapsed_seconds = 0;

  bool operator==(const Result&) const = default;
};

}  // namespace efawatch::collective
