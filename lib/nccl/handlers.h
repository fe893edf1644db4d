// SPDX-License-Identifier: Apache-2.0
#pragma once

// What the analyzer's record handlers share (analyzer.cc reads lines and finds records; the
// handlers in handlers.cc turn INFO and WARN records into process and communicator state).
// Internal to lib/nccl; called on the analyzer's thread only.

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "lib/common/utf8.h"
#include "lib/nccl/record_scanner.h"
#include "lib/nccl/state.h"
#include "lib/nccl/text_util.h"

namespace efawatch::nccl::internal {

// Everything a handler needs to know about the line being processed.
struct Ctx {
  State* st;
  uint32_t source;
  uint64_t line_no;
  std::string_view line;  // cleaned physical line, used as evidence text
};

// Assigns only when the value changes: most of these lines repeat for every rank and channel,
// and a compare is cheaper than a copy.
inline void Set(std::string* dst, std::string_view v) {
  if (!internal::Eq(*dst, v)) dst->assign(v);
}

inline void SetEv(Ev* ev, const Ctx& c) {
  if (ev->set()) return;
  ev->source = c.source;
  ev->line = c.line_no;
  // Cut on a character boundary: evidence ends up in JSON, proto and label text, all UTF-8.
  ev->text.assign(common::Utf8Prefix(c.line, c.st->options.max_evidence_bytes));
}

// SetEv without the text: communicators are many (thousands of processes, up to 256 each), and
// a copy of their line each measured ~5% of `efawatch analyze` in bench/analyze.sh. The snapshot
// shows file and line for proofs that rest on a communicator line.
inline void SetRef(Ev* ev, const Ctx& c) {
  if (ev->set()) return;
  ev->source = c.source;
  ev->line = c.line_no;
}

inline void SetRef(internal::LineRef* ref, const Ctx& c) {
  if (ref->set()) return;
  ref->source = c.source;
  ref->line = c.line_no;
}

inline void Count(Tally* t, const Ctx& c) {
  ++t->count;
  SetEv(&t->first, c);
}

inline void AddSetting(std::vector<std::pair<std::string, std::string>>* settings, size_t cap,
                       std::string_view name, std::string_view value) {
  value = Trim(value);
  if (name.size() > 64) name = name.substr(0, 64);
  if (value.size() > 256) value = value.substr(0, 256);
  for (auto& [n, v] : *settings) {
    if (n == name) {
      v.assign(value);
      return;
    }
  }
  if (settings->size() >= cap) return;
  settings->emplace_back(std::string(name), std::string(value));
}

// Transport counters are tiny vectors; keys are compared without building a string.
inline void AddTransport(CommState* comm, std::string_view a, std::string_view b = {},
                         std::string_view c = {}) {
  for (auto& [key, count] : comm->transports) {
    std::string_view k = key;
    if (k.size() == a.size() + b.size() + c.size() && StartsWith(k, a) &&
        internal::Eq(k.substr(a.size(), b.size()), b) &&
        internal::Eq(k.substr(a.size() + b.size()), c)) {
      ++count;
      return;
    }
  }
  if (comm->transports.size() >= 16) return;
  std::string key;
  key.reserve(a.size() + b.size() + c.size());
  key.append(a).append(b).append(c);
  comm->transports.emplace_back(std::move(key), 1);
}

inline CommState* CurrentComm(ProcState* p) {
  return p->current != nullptr ? p->current : &p->pending;
}

inline void AddUniqueString(std::vector<std::string>* set, std::string_view value, size_t cap) {
  if (value.empty()) return;
  for (const std::string& v : *set) {
    if (internal::Eq(v, value)) return;
  }
  if (set->size() < cap) set->emplace_back(value);
}

// Addresses kept per process: enough for NCCL's MAX_IFS (16) interfaces.
constexpr size_t kMaxAddrs = 16;

inline void AddOwnAddr(ProcState* p, std::string_view iface, std::string_view addr) {
  if (addr.empty() || internal::IsLoopback(iface, addr)) return;
  AddUniqueString(&p->addrs, addr.substr(0, 64), kMaxAddrs);
}

/// One INFO record's message `m` of process `p`.
void HandleInfo(State* st, ProcState* p, std::string_view m, const Ctx& c);
/// One WARN record of process `p`.
void HandleWarn(ProcState* p, const Record& r, const Ctx& c);

}  // namespace efawatch::nccl::internal
