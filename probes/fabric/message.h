// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "probes/fabric/endpoint.h"

namespace efawatch::fabric {

/// What a probe message asks of the responder, or answers.
enum class MessageType : uint8_t {
  kPing = 1,       ///< Echo me back as kPong (same size, same payload).
  kPong = 2,       ///< The echo of a kPing.
  kBwData = 3,     ///< Bandwidth traffic. Sunk, or echoed as kBwEcho when `value` has kEchoFlag.
  kBwEcho = 4,     ///< The echo of a kBwData in a bidirectional run.
  kBwDone = 5,     ///< Asks for the count of kBwData received for `session`.
  kBwDoneAck = 6,  ///< `value` holds the bytes received for `session`, `seq` the messages.
  kHello = 7,      ///< Asks for the responder's limits.
  kHelloAck = 8,   ///< `value` = max message bytes, `seq` = posted receive depth.
  kRmaHello = 9,   ///< Asks where RMA writes may go (the responder's sink).
  kRmaInfo = 10,   ///< Followed by an encoded RemoteRegion; `bytes` 0 when there is no sink.
};

/// The fixed header every probe message starts with, followed by the sender's fabric address
/// (so the responder can insert an unknown sender into its address vector) and then payload.
/// All integers are little-endian on the wire; the layout is written field by field, never by
/// copying a struct, so padding and host order never leak.
///
///   offset size field
///        0    4 magic ("EFW1")
///        4    1 version (1)
///        5    1 type (MessageType)
///        6    2 address length in bytes (1..kMaxAddressBytes)
///        8    8 sequence number
///       16    8 session (random per probe run; the responder keeps it, the prober filters on it)
///       24    8 value (meaning depends on type)
///       32    n sender address
struct MessageHeader {
  MessageType type = MessageType::kPing;
  uint64_t seq = 0;
  uint64_t session = 0;
  uint64_t value = 0;
  std::string sender;  ///< Raw fabric address bytes (fi_getname).
};

inline constexpr uint32_t kMessageMagic = 0x31574645;  // "EFW1" read little-endian.
inline constexpr uint8_t kMessageVersion = 1;
inline constexpr size_t kFixedHeaderBytes = 32;
/// Larger than any provider address we know (efa 32 B, sockaddr_in6 28 B, shm names); bounds
/// what a garbage message can make us copy.
inline constexpr size_t kMaxAddressBytes = 128;
/// Set in `value` of kBwData to ask for an echo (bidirectional bandwidth).
inline constexpr uint64_t kEchoFlag = 1;
/// Set in `value` of kPing by a background prober (the mesh): it sleeps between its messages, so
/// the responder may block right after answering instead of polling for the next one.
inline constexpr uint64_t kNoSpinFlag = 2;

/// Bytes the header takes for a sender address of `address_bytes`.
constexpr size_t HeaderBytes(size_t address_bytes) { return kFixedHeaderBytes + address_bytes; }

/// Writes `header` at the start of `out`. Returns the bytes written, or 0 when `out` is too small
/// or the sender address is empty or longer than kMaxAddressBytes.
size_t EncodeHeader(const MessageHeader& header, std::span<std::byte> out);

/// Rewrites only the type (and value) of an encoded header in place; used to turn a received
/// kPing into a kPong without copying the payload.
void RewriteType(std::span<std::byte> message, MessageType type, uint64_t value);

/// Bytes of an encoded RemoteRegion (address, key, length; 8 bytes each, little-endian).
inline constexpr size_t kRegionBytes = 24;

/// Writes `region` at `out` (kRegionBytes). Returns false when `out` is too small.
bool EncodeRegion(const RemoteRegion& region, std::span<std::byte> out);
/// Reads a region written by EncodeRegion; nullopt when `in` is too short.
std::optional<RemoteRegion> DecodeRegion(std::span<const std::byte> in);

/// Parses the header of a received message of `in.size()` bytes. Returns nullopt for anything
/// that is not a well-formed version-1 probe message (wrong magic, unknown type, address length
/// out of range or past the end), so garbage can be counted and dropped.
std::optional<MessageHeader> DecodeHeader(std::span<const std::byte> in);

}  // namespace efawatch::fabric
