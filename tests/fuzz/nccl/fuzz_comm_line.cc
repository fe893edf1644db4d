// SPDX-License-Identifier: Apache-2.0
// libFuzzer differential target for CommLineParser (lib/nccl/comm_line.h): every line of the
// input, in order, through one parser (so earlier lines' shapes are remembered and matched by
// later ones) must give what the token parser gives. The first byte, when it is '#', repeats
// each line with its digits changed, so lines of one shape follow each other as in a log.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "lib/nccl/comm_line.h"

namespace {

using namespace efawatch::nccl;

bool Same(const CommLine& a, const CommLine& b) {
  return a.ptr == b.ptr && a.comm_id == b.comm_id && a.bus_id == b.bus_id && a.rank == b.rank &&
         a.nranks == b.nranks && a.nnodes == b.nnodes && a.cuda_dev == b.cuda_dev &&
         a.local_ranks == b.local_ranks && a.start == b.start && a.complete == b.complete &&
         a.abort == b.abort;
}

void Check(CommLineParser* parser, std::string_view m) {
  // A copy the exact size of the message: the parser's loads must stay inside it (ASan).
  const std::string copy(m);
  if (!Same(parser->Parse(copy), internal::ParseCommLineByTokens(copy))) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const bool repeat = !input.empty() && input[0] == '#';
  CommLineParser parser;
  for (size_t b = 0; b < input.size();) {
    size_t e = input.find('\n', b);
    if (e == std::string_view::npos) e = input.size();
    const std::string_view line = input.substr(b, e - b);
    Check(&parser, line);
    if (repeat) {
      std::string other(line);
      for (char& ch : other) {
        if (ch >= '0' && ch <= '8') ++ch;
      }
      Check(&parser, other);
    }
    b = e + 1;
  }
  return 0;
}
