// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
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
struct CommLineSlots;  // what the vector pass found (comm_line.cc)
}  // namespace internal

// ParseCommLine() with a memory of the last few line shapes it parsed. The communicator lines
// of one log come from a handful of printf formats, so most lines repeat the shape of an earlier
// one: the same tokens, except the numbers (ranks, pointers, ids: tokens that start with a
// digit). A line that matches a remembered shape is read by comparing its fixed text and
// taking the numbers by position, or, when it is as long as the last line of that shape, by
// comparing the two (on the communicator lines of bench/analyze.sh's log 24 ns a line, against
// 46 for the fixed text alone and 70 for the vector pass); any other line is parsed in full and
// its shape remembered in place of the oldest. Same results as
// ParseCommLine() for every input, in every order. One per analyzer (not thread-safe). Without
// SSE2 (the vector pass that finds a new shape's fields) it is ParseCommLine().
class CommLineParser {
 public:
  CommLine Parse(std::string_view m);
  // Lines read by a remembered shape (for tests: the fast path is taken).
  uint64_t hits() const { return hits_; }

  // Longest message a shape is kept for (and the vector pass's limit); most numbers one shape
  // holds; shapes kept.
  static constexpr size_t kShapeBytes = 192;
  static constexpr size_t kMaxNumbers = 24;
  static constexpr size_t kShapes = 8;

 private:
  // Where a line's numbers are: number i is line.substr(at[i], len[i]).
  struct Numbers {
    uint8_t at[kMaxNumbers];
    uint8_t len[kMaxNumbers];
  };
  // A message with its numbers cut out: the fixed text between number i-1 and number i is
  // text[fixed_end[i-1], fixed_end[i]) (from 0 for i = 0); `numbers` numbers, then the last
  // fixed text. `field` is the number each CommLine field is read from (-1: none), in the order
  // ptr, comm_id, bus_id, rank, nranks, nnodes, cuda_dev, local_ranks.
  //
  // `last` is the last line read by this shape: where its numbers are, which bytes they cover
  // (`inside`, bit i of word w: byte 64w + i) and which bytes start one (`first`). A next line
  // of the same length that differs from it only inside numbers (and there not by a blank, nor
  // by a first byte that is no digit) has the same tokens of the same kinds: it is read with a
  // few vector compares, without walking the fixed text.
  struct Shape {
    std::array<char, kShapeBytes> text;
    std::array<uint8_t, kMaxNumbers + 1> fixed_end;
    std::array<int8_t, 8> field;
    uint8_t numbers = 0;
    bool start = false, complete = false, abort = false;
    std::array<char, kShapeBytes> last;
    Numbers last_numbers;
    std::array<uint64_t, kShapeBytes / 64> inside, first;
    size_t last_size = 0;
  };
  static bool Match(const Shape& s, std::string_view m, const uint64_t* blank, Numbers* nums);
  static bool SameButNumbers(const Shape& s, std::string_view m);
  static CommLine Read(const Shape& s, std::string_view m, const Numbers& nums);
  static void Remember(Shape* s, std::string_view m, const Numbers& nums);
  static bool Build(std::string_view m, const internal::CommLineSlots& slots, Shape* s,
                    Numbers* nums);

  // Allocated with the first shape: the agent keeps an analyzer per pod, and most pods print
  // no communicator line.
  std::unique_ptr<std::array<Shape, kShapes>> shapes_;
  size_t count_ = 0;  // shapes in use
  size_t last_ = 0;   // the one the last line matched, tried first
  size_t next_ = 0;   // the one the next new shape replaces
  uint64_t hits_ = 0;
};

namespace internal {
// The reference: one token at a time. ParseCommLine() uses it for messages too long for its
// vector pass; tests compare the two.
CommLine ParseCommLineByTokens(std::string_view m);
}  // namespace internal

}  // namespace efawatch::nccl
