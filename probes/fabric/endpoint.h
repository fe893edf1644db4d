// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "probes/fabric/fid.h"

namespace efawatch::fabric {

/// Which fabric to open. A plain value, usually built from the daemon's configuration.
struct EndpointOptions {
  /// Providers to try, in order. "efa" (the efa fabric), "efa-direct", "tcp" (tcp;ofi_rxm before
  /// libfabric 1.18), "sockets", "shm", or any other provider name fi_info lists.
  std::vector<std::string> providers = {"efa", "tcp"};
  /// Optional interface or domain to pin: matches the fi_info domain name exactly, or with the
  /// "-rdm" suffix EFA adds ("rdmap79s0" selects "rdmap79s0-rdm"; "lo" selects tcp on loopback).
  /// Empty: the provider's first RDM entry.
  std::string interface;
  /// Completion queue depth.
  size_t cq_size = 1024;
  /// Ask for a CQ wait object so Wait() can block on it instead of sleeping. It is not free: on
  /// tcp;ofi_rxm the provider then signals and polls a wait set on every completion (see
  /// ResponderOptions::wait_fd for what that costs a round trip).
  bool blocking_wait = false;
  /// Peers kept in the address vector; the least recently used is removed beyond this.
  size_t av_capacity = 256;
  /// Ask for FI_RMA as well (RMA-write bandwidth, the responder's sink). A provider that has no
  /// RMA entry is opened without it, and FabricInfo::rma says so: RMA is an extra, not a reason
  /// to fall to the next provider.
  bool rma = false;
  /// Ask for FI_SOURCE: each received message then names the sender libfabric knows it came
  /// from (Completion::source), which the responder checks against the address a message
  /// claims. A provider without it is opened without, and FabricInfo::source says so.
  bool source = false;

  bool operator==(const EndpointOptions&) const = default;
};

/// Where a peer may fi_write: its registered buffer, as fi_write wants it.
struct RemoteRegion {
  uint64_t address = 0;  ///< Virtual address with FI_MR_VIRT_ADDR, else the offset 0.
  uint64_t key = 0;      ///< fi_mr_key of the registration.
  uint64_t bytes = 0;    ///< Writable length; 0 means "no region offered".
};

/// What fi_getinfo actually gave us; reported so an operator sees tcp where efa was expected.
struct FabricInfo {
  std::string requested;         ///< The entry of EndpointOptions::providers that matched.
  std::string provider;          ///< fabric_attr->prov_name, e.g. "efa", "tcp;ofi_rxm".
  std::string fabric;            ///< fabric_attr->name, e.g. "efa", "efa-direct", "127.0.0.1/32".
  std::string domain;            ///< domain_attr->name, e.g. "rdmap79s0-rdm", "lo".
  uint32_t api_version = 0;      ///< FI_VERSION we asked for (min of headers and runtime library).
  uint32_t library_version = 0;  ///< fi_version() of the runtime library.
  bool rma = false;  ///< FI_RMA was asked for (EndpointOptions::rma) and this entry has it.
  /// FI_SOURCE was asked for (EndpointOptions::source), granted, and is trusted for this
  /// provider: Completion::source names the real sender. False for shm, whose libfabric 1.17
  /// reports a sender missing from the address vector as its first entry instead of
  /// FI_ADDR_NOTAVAIL (shm reaches only processes on the same host).
  bool source = false;
  bool mr_local = false;         ///< Buffers must be registered (FI_MR_LOCAL).
  bool mr_virt_addr = false;     ///< RMA addresses are virtual addresses (FI_MR_VIRT_ADDR).
  bool manual_progress = false;  ///< Data progress is FI_PROGRESS_MANUAL: poll to move bytes.
  size_t max_msg_size = 0;
  size_t inject_size = 0;
  size_t tx_size = 0;
  size_t rx_size = 0;
  std::string wait_object;  ///< "fd" or "none": how Wait() blocks.

  bool operator==(const FabricInfo&) const = default;
};

/// One completion read from the CQ. `context` is the fi_context2 passed to the post.
struct Completion {
  void* context = nullptr;
  size_t len = 0;
  uint64_t flags = 0;  ///< FI_SEND / FI_RECV bits.
  int error = 0;       ///< Positive FI_E* code when the operation failed; 0 on success.
  /// With FabricInfo::source, the sender of a received message as libfabric knows it: its
  /// fi_addr_t when it is in the address vector, FI_ADDR_NOTAVAIL when not. FI_ADDR_UNSPEC
  /// otherwise.
  fi_addr_t source = FI_ADDR_UNSPEC;
};

/// A page-aligned heap buffer (registration and DMA want page alignment).
class AlignedBuffer {
 public:
  /// `zero`: clear it, so a buffer that is sent never carries old heap bytes to a peer. Receive
  /// buffers skip it: large ones then stay untouched (not resident) until traffic arrives.
  explicit AlignedBuffer(size_t bytes, bool zero = true);
  ~AlignedBuffer();
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;
  std::byte* data() const { return data_; }
  size_t size() const { return size_; }
  std::span<std::byte> span() const { return {data_, size_}; }

 private:
  std::byte* data_;
  size_t size_;
};

/// One reliable-datagram (FI_EP_RDM, FI_MSG) endpoint with its fabric, domain, CQ and address
/// vector: everything a probe or the responder needs on one NIC.
///
/// Not thread-safe: the domain is opened with FI_THREAD_DOMAIN, so one thread at a time uses an
/// Endpoint (the responder's thread, or the thread running a probe). `address()` and `info()` are
/// immutable after Create and may be read from any thread.
class Endpoint {
 public:
  /// Selects a provider from `options.providers` (first one that has an RDM entry on the wanted
  /// interface), opens it and enables the endpoint. NOT_FOUND lists what each provider said.
  static absl::StatusOr<std::unique_ptr<Endpoint>> Create(const EndpointOptions& options);
  ~Endpoint();
  Endpoint(const Endpoint&) = delete;
  Endpoint& operator=(const Endpoint&) = delete;

  const FabricInfo& info() const { return info_; }
  /// Raw endpoint address (fi_getname); this is what travels to peers.
  const std::string& address() const { return address_; }
  /// Printable form of a raw address of this provider (fi_av_straddr), e.g.
  /// "fi_sockaddr_in://127.0.0.1:40007".
  std::string Printable(std::string_view raw) const;

  /// Returns the fi_addr_t of a peer, inserting its raw address into the address vector when new.
  /// Beyond av_capacity peers the least recently resolved one is removed (its in-flight operations
  /// may then fail, which callers handle as errors).
  absl::StatusOr<fi_addr_t> Resolve(std::string_view raw);
  size_t peers() const { return lru_.size(); }
  /// The fi_addr_t of a raw address already in the address vector (marked as just used), without
  /// inserting it; nullopt when it is not there.
  std::optional<fi_addr_t> Find(std::string_view raw);

  /// Registers `buffer` for send and receive when the provider needs it (FI_MR_LOCAL) and returns
  /// the descriptor to pass with every post that uses it (null when no registration is needed).
  /// The Endpoint keeps the registration until it closes; the buffer must outlive the Endpoint.
  /// With RMA the registration also allows fi_write from the buffer.
  absl::StatusOr<void*> Register(std::span<std::byte> buffer);

  /// Registers `buffer` as a target of remote writes only (FI_REMOTE_WRITE; never remote reads)
  /// and returns what a peer passes to fi_write. FAILED_PRECONDITION without RMA. The Endpoint
  /// keeps the registration until it closes; the buffer must outlive the Endpoint.
  absl::StatusOr<RemoteRegion> RegisterRemoteWrite(std::span<std::byte> buffer);

  /// Posts a receive / send. Return 0, -FI_EAGAIN (progress with Poll() and retry the same post)
  /// or another negative FI_E* code (see FiStatus). `ctx` must stay valid until its completion.
  ssize_t PostRecv(void* buf, size_t len, void* desc, fi_context2* ctx);
  ssize_t PostSend(const void* buf, size_t len, void* desc, fi_addr_t dest, fi_context2* ctx);
  /// Sends `len` <= info().inject_size bytes (fi_inject): the provider copies them before
  /// returning, so `buf` is free at once, and no completion is generated (a failure is silent).
  ssize_t PostInject(const void* buf, size_t len, fi_addr_t dest);

  /// Posts an RMA write of `len` bytes into the peer's region at `remote_address` (fi_write).
  /// Same return convention as PostSend; only valid when info().rma.
  ssize_t PostWrite(const void* buf, size_t len, void* desc, fi_addr_t dest,
                    uint64_t remote_address, uint64_t key, fi_context2* ctx);

  /// Asks the provider to cancel a posted operation (fi_cancel); it then completes with
  /// FI_ECANCELED. Best effort: providers cannot cancel every send.
  void Cancel(fi_context2* ctx);

  /// Reads up to `out.size()` completions (this also drives manual progress). Returns how many
  /// (0 when none), or a negative FI_E* code when the CQ itself failed. An error completion that
  /// names no posted operation is not returned (last_error() keeps it).
  ssize_t Poll(std::span<Completion> out);
  /// Text of the last error completion Poll read (fi_cq_strerror).
  const std::string& last_error() const { return last_error_; }

  /// Blocks until the CQ may have completions, `wake_fd` (if >= 0) is readable, or `timeout`
  /// passes. Spurious returns are allowed: callers Poll() afterwards. Without a wait object it
  /// sleeps for `timeout` (in poll(2) on `wake_fd` when given, so a wake-up still cuts it short):
  /// the caller picks the trade between wake-up latency and idle cost.
  void Wait(std::chrono::microseconds timeout, int wake_fd);
  bool has_wait_fd() const { return wait_fd_ >= 0; }

 private:
  Endpoint() = default;
  absl::Status Open(const EndpointOptions& options, InfoPtr info);
  // The steps of Open(), in order; those that can fail return the first libfabric error.
  // Fills info_ from the chosen fi_info.
  void Describe(const EndpointOptions& options);
  // The completion queue, with an fd to block on when asked for and offered.
  absl::Status OpenCq(const EndpointOptions& options);
  absl::Status OpenAv();
  // Opens the endpoint, binds the address vector and CQ to it, and enables it.
  absl::Status EnableEndpoint();
  // Our raw address (fi_getname), valid only once the endpoint is enabled.
  absl::Status ReadAddress();

  FabricInfo info_;
  InfoPtr fi_;
  // Declared in opening order: they close in reverse (endpoint first, fabric last).
  FidPtr<fid_fabric> fabric_;
  FidPtr<fid_domain> domain_;
  FidPtr<fid_cq> cq_;
  FidPtr<fid_av> av_;
  std::vector<FidPtr<fid_mr>> mrs_;
  FidPtr<fid_ep> ep_;
  int wait_fd_ = -1;
  std::string address_;
  std::string last_error_;
  size_t av_capacity_ = 0;
  // Looked up by string_view (the responder does per message): no key string is built.
  struct AddressHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using LruList = std::list<std::pair<std::string, fi_addr_t>>;
  LruList lru_;  // front = most recently used.
  std::unordered_map<std::string, LruList::iterator, AddressHash, std::equal_to<>> peers_;
};

/// The FI_VERSION to request: the older of the headers we built with and the runtime library, so
/// fi_getinfo never sees a version newer than the library it runs on (it would fail with
/// -FI_ENOSYS).
uint32_t NegotiatedApiVersion();

/// "1.22 from /opt/amazon/efa/lib/libfabric.so.1": the version and file of the libfabric the
/// process runs on, so an operator sees whether the host's AWS build or the image's was loaded
/// (LD_LIBRARY_PATH decides). The path is "an unknown file" when the loader cannot tell.
std::string LoadedLibfabric();

}  // namespace efawatch::fabric
