// SPDX-License-Identifier: Apache-2.0
#include "daemon/logs/checkpoint_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "daemon/logs/json_shape.h"
#include "spdlog/spdlog.h"

namespace efawatch::logs {
namespace fs = std::filesystem;

namespace {
// Enough bytes to tell a copytruncate-and-rewrite apart from the file we left: log lines carry
// timestamps, so 64 bytes before the offset differ once the file was rewritten.
constexpr uint64_t kTailBytes = 64;

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

nlohmann::json FileJson(const std::string& path, const ResumePoint& r) {
  return {{"path", path},       {"dev", r.dev},         {"ino", r.ino},
          {"offset", r.offset}, {"line_no", r.line_no}, {"tail", r.tail}};
}

std::string ToJsonText(const TailerCheckpoint& state) {
  nlohmann::json j;
  j["version"] = 1;
  // No "files" key at all when no file is followed: the format agents before this one wrote.
  for (const auto& [path, r] : state.files) j["files"].push_back(FileJson(path, r));
  const TailerCheckpoint::Counters& c = state.counters;
  j["counters"] = {{"bytes_read", c.bytes_read},
                   {"lines_read", c.lines_read},
                   {"rotations", c.rotations},
                   {"truncations", c.truncations},
                   {"lines_truncated", c.lines_truncated}};
  j["sink"] = state.sink;
  // Paths are bytes: a name that is not UTF-8 is written with U+FFFD rather than throwing.
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The shape is checked whole before anything is taken: a damaged checkpoint costs the counts it
// held, never the agent, and half of one is never taken.
bool HasCheckpointShape(const nlohmann::json& j) {
  using K = JsonKind;
  return HasShape(j, {{"files", K::kArray}, {"counters", K::kObject}, {"sink", K::kString}}) &&
         (!j.contains("files") || AllHaveShape(j["files"], {{"path", K::kString},
                                                            {"dev", K::kUnsigned},
                                                            {"ino", K::kUnsigned},
                                                            {"offset", K::kUnsigned},
                                                            {"line_no", K::kUnsigned},
                                                            {"tail", K::kString}})) &&
         (!j.contains("counters") || HasShape(j["counters"], {{"bytes_read", K::kUnsigned},
                                                              {"lines_read", K::kUnsigned},
                                                              {"rotations", K::kUnsigned},
                                                              {"truncations", K::kUnsigned},
                                                              {"lines_truncated", K::kUnsigned}}));
}

TailerCheckpoint FromJson(const nlohmann::json& j) {
  TailerCheckpoint state;
  if (const auto files = j.find("files"); files != j.end()) {
    for (const auto& f : *files) {
      state.files.emplace_back(
          JsonString(f, "path"),
          ResumePoint{JsonUint(f, "dev"), JsonUint(f, "ino"), JsonUint(f, "offset"),
                      JsonUint(f, "line_no"), JsonString(f, "tail")});
    }
  }
  const nlohmann::json c = j.value("counters", nlohmann::json::object());
  state.counters = {JsonUint(c, "bytes_read"), JsonUint(c, "lines_read"), JsonUint(c, "rotations"),
                    JsonUint(c, "truncations"), JsonUint(c, "lines_truncated")};
  state.sink = JsonString(j, "sink");
  return state;
}
}  // namespace

std::string TailAt(int fd, uint64_t offset) {
  const uint64_t start = offset > kTailBytes ? offset - kTailBytes : 0;
  std::string buf(offset - start, '\0');
  const ssize_t n = ::pread(fd, buf.data(), buf.size(), static_cast<off_t>(start));
  if (n < 0) return {};
  buf.resize(static_cast<size_t>(n));
  return Hex(buf);
}

absl::Status CheckpointStore::Write(const TailerCheckpoint& state) {
  if (!enabled()) return absl::OkStatus();
  const std::string text = ToJsonText(state);
  // The same state as the last one written (an idle agent's, every checkpoint interval): not
  // written and fsynced again. Its hash, not a copy: the text holds a tail per file followed.
  const size_t hash = std::hash<std::string>{}(text) | 1;  // never 0, which means "none yet"
  if (hash == last_hash_) {
    ++counters_.checkpoints_unchanged;
    return absl::OkStatus();
  }
  const std::string tmp = state_file_.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out) {
      // Counted (and alerted on: EfawatchCheckpointWritesFailing): a warning every
      // --checkpoint interval in a log nobody reads hid that a restart would lose our place.
      ++counters_.checkpoint_write_failures;
      spdlog::warn("cannot write checkpoint {}", tmp);
      return absl::UnavailableError(absl::StrCat("cannot write checkpoint ", tmp));
    }
  }
  // fsync before rename: after a crash the state file is the old one or the new one, whole.
  if (int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC); fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  std::error_code ec;
  fs::rename(tmp, state_file_, ec);
  if (ec) {
    ++counters_.checkpoint_write_failures;
    spdlog::warn("cannot rename checkpoint {} to {}: {}", tmp, state_file_.string(), ec.message());
    return absl::UnavailableError(absl::StrCat("cannot rename checkpoint ", tmp, " to ",
                                               state_file_.string(), ": ", ec.message()));
  }
  last_hash_ = hash;
  ++counters_.checkpoint_writes;
  return absl::OkStatus();
}

absl::StatusOr<TailerCheckpoint> CheckpointStore::Load(const LineSink& sink) {
  if (!enabled()) return absl::NotFoundError("no state file configured");
  std::ifstream in(state_file_);
  if (!in) return absl::NotFoundError(absl::StrCat("no checkpoint ", state_file_.string()));
  const auto j = nlohmann::json::parse(in, nullptr, false);
  in.close();
  if (j.is_discarded()) return SetAside("is not JSON (cut short?)");
  if (!HasCheckpointShape(j)) return SetAside("has fields of the wrong type");
  TailerCheckpoint state = FromJson(j);
  if (!sink.CheckpointValid(state.sink)) return SetAside("has a damaged sink state");
  return state;
}

absl::Status CheckpointStore::SetAside(std::string_view why) {
  ++counters_.checkpoints_set_aside;
  const fs::path bad = state_file_.string() + ".bad";
  std::error_code ec;
  fs::rename(state_file_, bad, ec);
  spdlog::warn("checkpoint {} {}; set aside as {}; starting from the beginning of every log",
               state_file_.string(), why, bad.string());
  return absl::DataLossError(
      absl::StrCat("checkpoint ", state_file_.string(), " ", std::string(why)));
}

}  // namespace efawatch::logs
