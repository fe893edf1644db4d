// SPDX-License-Identifier: Apache-2.0
#include "proto/codec/probes.h"

#include <chrono>

#include "proto/codec/records.h"

namespace efawatch::codec {
namespace {

double Seconds(std::chrono::nanoseconds d) { return std::chrono::duration<double>(d).count(); }

std::chrono::nanoseconds FromSeconds(double s) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(s));
}

fabric::FabricInfo FromProto(const v1::FabricAddress& in) {
  fabric::FabricInfo info;
  info.provider = in.provider();
  info.fabric = in.fabric();
  info.domain = in.domain();
  info.rma = in.rma();
  return info;
}

void ToProto(const fabric::RttSummary& s, v1::RttSummary* out) {
  out->set_count(s.count);
  out->set_min_us(s.min_us);
  out->set_median_us(s.median_us);
  out->set_p90_us(s.p90_us);
  out->set_p99_us(s.p99_us);
  out->set_max_us(s.max_us);
  out->set_mean_us(s.mean_us);
}

fabric::RttSummary FromProto(const v1::RttSummary& in) {
  return {.count = in.count(),
          .min_us = in.min_us(),
          .median_us = in.median_us(),
          .p90_us = in.p90_us(),
          .p99_us = in.p99_us(),
          .max_us = in.max_us(),
          .mean_us = in.mean_us()};
}

void ToProto(const fabric::BandwidthPoint& p, v1::BandwidthPoint* out) {
  out->set_message_bytes(p.message_bytes);
  out->set_messages(p.messages);
  out->set_bytes(p.bytes);
  out->set_seconds(p.seconds);
  out->set_gbytes_per_second(p.gbytes_per_second);
}

fabric::BandwidthPoint FromProto(const v1::BandwidthPoint& in) {
  return {.message_bytes = in.message_bytes(),
          .messages = in.messages(),
          .bytes = in.bytes(),
          .seconds = in.seconds(),
          .gbytes_per_second = in.gbytes_per_second()};
}

}  // namespace

void ToProto(const fabric::FabricInfo& info, const std::string& printable, v1::FabricAddress* out) {
  out->set_printable(printable);
  out->set_provider(info.provider);
  out->set_fabric(info.fabric);
  out->set_domain(info.domain);
  out->set_rma(info.rma);
}

void ToProto(const fabric::PingResult& r, v1::PingResponse* out) {
  ToProto(r.fabric, r.local_address, out->mutable_local());
  out->set_peer(r.peer_address);
  out->set_message_bytes(r.message_bytes);
  out->set_sent(r.sent);
  out->set_received(r.received);
  out->set_lost(r.lost);
  out->set_errors(r.errors);
  out->set_loss_ratio(r.loss_ratio);
  ToProto(r.rtt, out->mutable_rtt());
  out->set_end(ToProto(r.end));
  out->set_last_error(r.last_error);
  out->set_elapsed_seconds(Seconds(r.elapsed));
}

fabric::PingResult FromProto(const v1::PingResponse& in) {
  fabric::PingResult r;
  r.fabric = FromProto(in.local());
  r.local_address = in.local().printable();
  r.peer_address = in.peer();
  r.message_bytes = in.message_bytes();
  r.sent = in.sent();
  r.received = in.received();
  r.lost = in.lost();
  r.errors = in.errors();
  r.loss_ratio = in.loss_ratio();
  r.rtt = FromProto(in.rtt());
  r.end = FromProto(in.end());
  r.last_error = in.last_error();
  r.elapsed = FromSeconds(in.elapsed_seconds());
  return r;
}

void ToProto(const fabric::BandwidthResult& r, v1::BandwidthResponse* out) {
  ToProto(r.fabric, r.local_address, out->mutable_local());
  out->set_peer(r.peer_address);
  out->set_bidirectional(r.bidirectional);
  out->set_rma(r.rma);
  out->set_window(r.window);
  for (const auto& p : r.points) ToProto(p, out->add_points());
  out->set_errors(r.errors);
  out->set_end(ToProto(r.end));
  out->set_last_error(r.last_error);
  out->set_elapsed_seconds(Seconds(r.elapsed));
}

fabric::BandwidthResult FromProto(const v1::BandwidthResponse& in) {
  fabric::BandwidthResult r;
  r.fabric = FromProto(in.local());
  r.local_address = in.local().printable();
  r.peer_address = in.peer();
  r.bidirectional = in.bidirectional();
  r.rma = in.rma();
  r.window = in.window();
  for (const auto& p : in.points()) r.points.push_back(FromProto(p));
  r.errors = in.errors();
  r.end = FromProto(in.end());
  r.last_error = in.last_error();
  r.elapsed = FromSeconds(in.elapsed_seconds());
  return r;
}

fabric::PingOptions FromProto(const v1::PingRequest& in) {
  fabric::PingOptions o;
  if (in.count() != 0) o.count = in.count();
  if (in.message_bytes() != 0) o.message_bytes = in.message_bytes();
  if (in.warmup() != 0) o.warmup = in.warmup();
  if (in.message_timeout_ms() != 0) {
    o.message_timeout = std::chrono::milliseconds(in.message_timeout_ms());
  }
  if (in.deadline_ms() != 0) o.deadline = std::chrono::milliseconds(in.deadline_ms());
  return o;
}

fabric::BandwidthOptions FromProto(const v1::BandwidthRequest& in) {
  fabric::BandwidthOptions o;
  if (in.sizes_size() > 0) o.sizes.assign(in.sizes().begin(), in.sizes().end());
  o.bidirectional = in.bidirectional();
  o.rma = in.rma();
  if (in.window() != 0) o.window = in.window();
  if (in.ms_per_size() != 0) o.duration_per_size = std::chrono::milliseconds(in.ms_per_size());
  if (in.deadline_ms() != 0) o.deadline = std::chrono::milliseconds(in.deadline_ms());
  return o;
}

}  // namespace efawatch::codec
