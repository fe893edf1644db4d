#pragma once

#include <cstddef>
#include <string_view>

// Parses the message of a communicator line. Every format from NCCL 2.2 to 2.30 is "key value"
// pairs plus a status: "comm 0x.. rank 3 nRanks 8 nNodes 2 localRanks 8 ...", "ncclCommInitRank
// comm 0x.. rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 1c000 commId 0x65.. - Init START",
// "comm 0x.. rank 0 nranks 4 cudaDev 3 busId 9b000 - Abort COMPLETE", "rank 0 nranks 4" (2.3).
// A job prints one such line per rank and communicator (a fifth of an NCCL log), so this is a
// pure function over the text, separate from what the analyzer does with the result.
namespace efawatch::nccl {

struct CommLine {
  std::string_view ptr;      // after the first "comm"
  std::string_view comm_id;  // after the last "commId"
  std::string_view bus_id;   // after the last "busId"
  int rank = -1;             // after the first "rank"
  int nranks = -1;           // after the last "nranks" / "nRanks"
  int nnodes = -1;           // "nNodes"
  int cuda_dev = -1;         // "cudaDev"
  int local_ranks = -1;      // "localRanks"
  bool start = false;        // a status token starting with "START"
  bool complete = false;     // "Init COMPLETE", "- COMPLETE"
  bool abort = false;        // "Abort COMPLETE"
};

// Looks at the first 64 blank-separated tokens of the first kMaxCommLineBytes bytes (a real
// line has under 25 tokens in under 200 bytes). A token after a key is that key's value, never
// a status; integers are read as ParseInt reads them (leading digits, -1 without).
inline constexpr size_t kMaxCommLineBytes = 512;
CommLine ParseCommLine(std::string_view m);

namespace internal {
// The reference: one token at a time. ParseCommLine() uses it for messages too long for its
// vector pass; tests compare the two.
CommLine ParseCommLineByTokens(std::string_view m);
}  // namespace internal

}  // namespace efawatch::nccl
