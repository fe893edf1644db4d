// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/endpoint.h"

#include <dlfcn.h>
#include <poll.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "probes/fabric/fi_status.h"

namespace efawatch::fabric {
namespace {

constexpr size_t kPageBytes = 4096;

char* Dup(std::string_view s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));  // fi_freeinfo frees with free().
  if (p == nullptr) throw std::bad_alloc();
  std::memcpy(p, s.data(), s.size());
  p[s.size()] = '\0';
  return p;
}

// Hints that every provider we target accepts (see the reference notes, "recommended portable
// hints"): RDM + FI_MSG only (efa-direct has no FI_TAGGED), FI_CONTEXT|FI_CONTEXT2 (efa-direct
// requires FI_CONTEXT2, so every post carries an fi_context2), and the mr_mode fi_pingpong uses.
InfoPtr MakeHints(std::string_view provider, bool rma, bool source) {
  InfoPtr hints(fi_allocinfo());
  if (!hints) throw std::bad_alloc();
  hints->ep_attr->type = FI_EP_RDM;
  hints->caps = FI_MSG;
  if (rma) hints->caps |= FI_RMA;
  if (source) hints->caps |= FI_SOURCE;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
  hints->domain_attr->threading = FI_THREAD_DOMAIN;
  if (provider == "efa" || provider == "efa-direct") {
    hints->fabric_attr->prov_name = Dup("efa");
    // From libfabric 2.1 efa lists "efa-direct" entries first; name the fabric so "efa" means the
    // full-featured efa fabric. Without FI_LOCAL_COMM the provider keeps shm out of the path, so
    // a probe between two agents on one host still crosses the NIC.
    hints->fabric_attr->name = Dup(provider);
    hints->caps |= FI_REMOTE_COMM;
  } else {
    hints->fabric_attr->prov_name = Dup(provider);
  }
  return hints;
}

bool DomainMatches(const fi_info* info, std::string_view want) {
  if (want.empty()) return true;
  const std::string_view domain =
      info->domain_attr->name != nullptr ? info->domain_attr->name : std::string_view();
  return domain == want ||
         (domain.size() == want.size() + 4 && domain.starts_with(want) && domain.ends_with("-rdm"));
}

const char* WaitName(fi_wait_obj w) {
  switch (w) {
    case FI_WAIT_FD:
      return "fd";
    case FI_WAIT_UNSPEC:
      return "unspec";
    default:
      return "none";
  }
}

// libfabric's shm provider refuses to list itself unless /dev/shm has room for one region per
// online CPU (about 16 MiB each in 1.17), and says so only at FI_LOG_LEVEL=warn; a pod's default
// 64 MiB /dev/shm on a many-core node never has it. The failure names the cause instead.
std::string ShmSpaceNote() {
  struct statvfs st {};
  if (::statvfs("/dev/shm", &st) != 0) return " (no /dev/shm)";
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  constexpr uint64_t kRegionMiB = 16;
  const uint64_t free_mib = static_cast<uint64_t>(st.f_bavail) * st.f_frsize >> 20;
  const uint64_t wanted_mib = kRegionMiB * static_cast<uint64_t>(cpus > 0 ? cpus : 1);
  if (free_mib >= wanted_mib) return "";
  return absl::StrCat(" (/dev/shm has ", free_mib, " MiB free; shm wants about ", kRegionMiB,
                      " MiB per online CPU, ", wanted_mib, " MiB here)");
}

}  // namespace

uint32_t NegotiatedApiVersion() {
  return std::min<uint32_t>(FI_VERSION(FI_MAJOR_VERSION, FI_MINOR_VERSION), fi_version());
}

std::string LoadedLibfabric() {
  const uint32_t v = fi_version();
  // fi_getinfo lives in libfabric itself, so the object that holds it is the loaded library.
  Dl_info info{};
  const bool found = ::dladdr(reinterpret_cast<void*>(&fi_getinfo), &info) != 0 &&
                     info.dli_fname != nullptr && info.dli_fname[0] != '\0';
  return absl::StrCat(FI_MAJOR(v), ".", FI_MINOR(v), " from ",
                      found ? info.dli_fname : "an unknown file");
}

AlignedBuffer::AlignedBuffer(size_t bytes, bool zero)
    : data_(static_cast<std::byte*>(::operator new[](
          (bytes + kPageBytes - 1) / kPageBytes * kPageBytes, std::align_val_t(kPageBytes)))),
      size_(bytes) {
  if (zero) std::memset(data_, 0, size_);
}

AlignedBuffer::~AlignedBuffer() { ::operator delete[](data_, std::align_val_t(kPageBytes)); }

absl::StatusOr<std::unique_ptr<Endpoint>> Endpoint::Create(const EndpointOptions& options) {
  if (options.providers.empty()) return absl::InvalidArgumentError("no fabric provider configured");
  const uint32_t version = NegotiatedApiVersion();
  std::vector<std::string> tried;
  for (const std::string& provider : options.providers) {
    fi_info* raw = nullptr;
    // FI_RMA and FI_SOURCE are extras, not reasons to fall to the next provider. Without RMA
    // probes refuse with a clear reason; without FI_SOURCE the responder answers the address a
    // message claims, and says so. FI_SOURCE is kept longest: it is the security check.
    int ret = -FI_ENODATA;
    std::vector<std::pair<bool, bool>> asked;
    for (const auto& extras :
         {std::pair{options.rma, options.source}, std::pair{false, options.source},
          std::pair{options.rma, false}, std::pair{false, false}}) {
      if (std::find(asked.begin(), asked.end(), extras) != asked.end()) continue;
      asked.push_back(extras);
      ret = fi_getinfo(version, nullptr, nullptr, 0,
                       MakeHints(provider, extras.first, extras.second).get(), &raw);
      if (ret != -FI_ENODATA) break;
    }
    InfoPtr list(raw);
    if (ret != 0) {
      tried.push_back(absl::StrCat(provider, ": ",
                                   std::string(FiStatus("fi_getinfo", ret).message()),
                                   provider == "shm" ? ShmSpaceNote() : ""));
      continue;
    }
    std::vector<std::string> domains;
    for (const fi_info* cur = list.get(); cur != nullptr; cur = cur->next) {
      if (!DomainMatches(cur, options.interface)) {
        if (cur->domain_attr->name != nullptr) domains.emplace_back(cur->domain_attr->name);
        continue;
      }
      InfoPtr chosen(fi_dupinfo(cur));
      if (!chosen) return absl::ResourceExhaustedError("fi_dupinfo failed");
      std::unique_ptr<Endpoint> ep(new Endpoint());
      ep->info_.requested = provider;
      ep->info_.api_version = version;
      absl::Status s = ep->Open(options, std::move(chosen));
      if (!s.ok()) {
        // An entry that is listed but cannot open (no device access, QPs exhausted) is a hard
        // error for this provider; the next provider in the list may still work.
        tried.push_back(absl::StrCat(provider, " (", ep->info_.domain, "): ", s.message()));
        break;
      }
      return ep;
    }
    if (!domains.empty() || !options.interface.empty()) {
      std::sort(domains.begin(), domains.end());
      domains.erase(std::unique(domains.begin(), domains.end()), domains.end());
      tried.push_back(absl::StrCat(provider, ": no domain named '", options.interface,
                                   "' (have: ", absl::StrJoin(domains, ", "), ")"));
    }
  }
  return absl::NotFoundError(
      absl::StrCat("no usable fabric provider: ", absl::StrJoin(tried, "; ")));
}

absl::Status Endpoint::Open(const EndpointOptions& options, InfoPtr info) {
  fi_ = std::move(info);
  Describe(options);
  av_capacity_ = std::max<size_t>(options.av_capacity, 1);

  fid_fabric* fabric = nullptr;
  int ret = fi_fabric(fi_->fabric_attr, &fabric, nullptr);
  if (ret != 0) return FiStatus("fi_fabric", ret);
  fabric_.reset(fabric);

  fid_domain* domain = nullptr;
  ret = fi_domain(fabric_.get(), fi_.get(), &domain, nullptr);
  if (ret != 0) return FiStatus("fi_domain", ret);
  domain_.reset(domain);

  if (absl::Status s = OpenCq(options); !s.ok()) return s;
  if (absl::Status s = OpenAv(); !s.ok()) return s;
  if (absl::Status s = EnableEndpoint(); !s.ok()) return s;
  return ReadAddress();
}

void Endpoint::Describe(const EndpointOptions& options) {
  info_.provider = fi_->fabric_attr->prov_name ? fi_->fabric_attr->prov_name : "";
  info_.fabric = fi_->fabric_attr->name ? fi_->fabric_attr->name : "";
  info_.domain = fi_->domain_attr->name ? fi_->domain_attr->name : "";
  info_.library_version = fi_version();
  info_.rma = options.rma && (fi_->caps & FI_RMA) == FI_RMA;
  // shm in libfabric 1.17 names a sender that is not in the address vector as fi_addr 0 (seen in
  // a three-endpoint test), so its FI_SOURCE cannot tell a claim from the truth.
  info_.source = options.source && (fi_->caps & FI_SOURCE) == FI_SOURCE && info_.provider != "shm";
  info_.mr_local = (fi_->domain_attr->mr_mode & FI_MR_LOCAL) != 0;
  info_.mr_virt_addr = (fi_->domain_attr->mr_mode & FI_MR_VIRT_ADDR) != 0;
  info_.manual_progress = fi_->domain_attr->data_progress == FI_PROGRESS_MANUAL;
  info_.max_msg_size = fi_->ep_attr->max_msg_size;
  info_.inject_size = fi_->tx_attr->inject_size;
  info_.tx_size = fi_->tx_attr->size;
  info_.rx_size = fi_->rx_attr->size;
}

absl::Status Endpoint::OpenCq(const EndpointOptions& options) {
  // Not every provider offers an fd (efa: not with shm; efa dgram: none), so fall back to no wait
  // object and short sleeps. fi_cq_sread (FI_WAIT_UNSPEC) is not used: on shm in 1.17 it spun at
  // 80% of a core and did not return within its timeout.
  std::vector<fi_wait_obj> waits = {FI_WAIT_NONE};
  if (options.blocking_wait) waits = {FI_WAIT_FD, FI_WAIT_NONE};
  int ret = 0;
  for (fi_wait_obj w : waits) {
    fi_cq_attr cq_attr{};
    cq_attr.size = options.cq_size;
    cq_attr.format = FI_CQ_FORMAT_MSG;
    cq_attr.wait_obj = w;
    fid_cq* cq = nullptr;
    ret = fi_cq_open(domain_.get(), &cq_attr, &cq, nullptr);
    if (ret != 0) continue;
    if (w == FI_WAIT_FD) {
      int fd = -1;
      if (fi_control(&cq->fid, FI_GETWAIT, &fd) != 0 || fd < 0) {
        fi_close(&cq->fid);
        continue;
      }
      wait_fd_ = fd;
    }
    info_.wait_object = WaitName(w);
    cq_.reset(cq);
    break;
  }
  if (!cq_) return FiStatus("fi_cq_open", ret);
  return absl::OkStatus();
}

absl::Status Endpoint::OpenAv() {
  fi_av_attr av_attr{};
  av_attr.type = FI_AV_TABLE;
  av_attr.count = av_capacity_;
  fid_av* av = nullptr;
  const int ret = fi_av_open(domain_.get(), &av_attr, &av, nullptr);
  if (ret != 0) return FiStatus("fi_av_open", ret);
  av_.reset(av);
  return absl::OkStatus();
}

absl::Status Endpoint::EnableEndpoint() {
  fid_ep* ep = nullptr;
  int ret = fi_endpoint(domain_.get(), fi_.get(), &ep, nullptr);
  if (ret != 0) return FiStatus("fi_endpoint", ret);
  ep_.reset(ep);
  ret = fi_ep_bind(ep_.get(), &av_->fid, 0);
  if (ret != 0) return FiStatus("fi_ep_bind(av)", ret);
  ret = fi_ep_bind(ep_.get(), &cq_->fid, FI_TRANSMIT | FI_RECV);
  if (ret != 0) return FiStatus("fi_ep_bind(cq)", ret);
  ret = fi_enable(ep_.get());
  if (ret != 0) return FiStatus("fi_enable", ret);
  return absl::OkStatus();
}

absl::Status Endpoint::ReadAddress() {
  // fi_getname is valid only after fi_enable; it reports the needed size when ours is too small.
  size_t len = 64;
  address_.resize(len);
  int ret = fi_getname(&ep_->fid, address_.data(), &len);
  if (ret == -FI_ETOOSMALL) {
    address_.resize(len);
    ret = fi_getname(&ep_->fid, address_.data(), &len);
  }
  if (ret != 0) return FiStatus("fi_getname", ret);
  address_.resize(len);
  return absl::OkStatus();
}

Endpoint::~Endpoint() = default;

std::string Endpoint::Printable(std::string_view raw) const {
  char buf[256];
  size_t len = sizeof(buf);
  fi_av_straddr(av_.get(), raw.data(), buf, &len);
  buf[sizeof(buf) - 1] = '\0';
  return std::string(buf);
}

std::optional<fi_addr_t> Endpoint::Find(std::string_view raw) {
  auto it = peers_.find(raw);
  if (it == peers_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->second;
}

absl::StatusOr<fi_addr_t> Endpoint::Resolve(std::string_view raw) {
  // Providers read a fixed-size address from the pointer (sockaddr, efa_ep_addr), so a length that
  // differs from ours is garbage or another provider's address, and never reaches fi_av_insert.
  if (raw.size() != address_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("fabric address of ", raw.size(),
                                                   " bytes; provider ", info_.provider, " uses ",
                                                   address_.size()));
  }
  if (auto known = Find(raw)) return *known;
  std::string key(raw);
  if (lru_.size() >= av_capacity_) {
    fi_addr_t victim = lru_.back().second;
    // A failed removal leaks one AV slot; the provider's table grows rather than breaks.
    fi_av_remove(av_.get(), &victim, 1, 0);
    peers_.erase(lru_.back().first);
    lru_.pop_back();
  }
  fi_addr_t addr = FI_ADDR_UNSPEC;
  const int ret = fi_av_insert(av_.get(), key.data(), 1, &addr, 0, nullptr);
  if (ret != 1) {
    return ret < 0 ? FiStatus("fi_av_insert", ret)
                   : absl::InvalidArgumentError("fi_av_insert: address rejected");
  }
  lru_.emplace_front(key, addr);
  peers_.emplace(std::move(key), lru_.begin());
  return addr;
}

absl::StatusOr<void*> Endpoint::Register(std::span<std::byte> buffer) {
  if (!info_.mr_local) return nullptr;
  const uint64_t access = FI_SEND | FI_RECV | (info_.rma ? FI_WRITE : 0);
  fid_mr* mr = nullptr;
  const int ret =
      fi_mr_reg(domain_.get(), buffer.data(), buffer.size(), access, 0, 0, 0, &mr, nullptr);
  if (ret != 0) return FiStatus("fi_mr_reg", ret);
  mrs_.emplace_back(mr);
  return fi_mr_desc(mr);
}

absl::StatusOr<RemoteRegion> Endpoint::RegisterRemoteWrite(std::span<std::byte> buffer) {
  if (!info_.rma) {
    return absl::FailedPreconditionError(
        absl::StrCat("provider ", info_.provider, " has no RMA (FI_RMA)"));
  }
  // Target buffers are registered whatever FI_MR_LOCAL says: a peer can reach only registered
  // memory, and only with the access granted here (writes, no reads).
  fid_mr* mr = nullptr;
  const int ret = fi_mr_reg(domain_.get(), buffer.data(), buffer.size(), FI_REMOTE_WRITE, 0, 0, 0,
                            &mr, nullptr);
  if (ret != 0) return FiStatus("fi_mr_reg(FI_REMOTE_WRITE)", ret);
  mrs_.emplace_back(mr);
  RemoteRegion region;
  region.address = info_.mr_virt_addr ? reinterpret_cast<uint64_t>(buffer.data()) : 0;
  region.key = fi_mr_key(mr);
  region.bytes = buffer.size();
  return region;
}

ssize_t Endpoint::PostInject(const void* buf, size_t len, fi_addr_t dest) {
  return fi_inject(ep_.get(), buf, len, dest);
}

ssize_t Endpoint::PostWrite(const void* buf, size_t len, void* desc, fi_addr_t dest,
                            uint64_t remote_address, uint64_t key, fi_context2* ctx) {
  return fi_write(ep_.get(), buf, len, desc, dest, remote_address, key, ctx);
}

void Endpoint::Cancel(fi_context2* ctx) { fi_cancel(&ep_->fid, ctx); }

ssize_t Endpoint::PostRecv(void* buf, size_t len, void* desc, fi_context2* ctx) {
  return fi_recv(ep_.get(), buf, len, desc, FI_ADDR_UNSPEC, ctx);
}

ssize_t Endpoint::PostSend(const void* buf, size_t len, void* desc, fi_addr_t dest,
                           fi_context2* ctx) {
  return fi_send(ep_.get(), buf, len, desc, dest, ctx);
}

ssize_t Endpoint::Poll(std::span<Completion> out) {
  if (out.empty()) return 0;
  constexpr size_t kBatch = 32;
  fi_cq_msg_entry entries[kBatch];
  fi_addr_t sources[kBatch];
  const size_t want = std::min(out.size(), kBatch);
  const ssize_t ret = info_.source ? fi_cq_readfrom(cq_.get(), entries, want, sources)
                                   : fi_cq_read(cq_.get(), entries, want);
  if (ret > 0) {
    for (ssize_t i = 0; i < ret; ++i) {
      out[i] = Completion{entries[i].op_context, entries[i].len, entries[i].flags, 0,
                          info_.source ? sources[i] : FI_ADDR_UNSPEC};
    }
    return ret;
  }
  if (ret == -FI_EAGAIN) return 0;
  if (ret != -FI_EAVAIL) return ret;
  fi_cq_err_entry err{};
  const ssize_t r = fi_cq_readerr(cq_.get(), &err, 0);
  if (r < 0) return r == -FI_EAGAIN ? 0 : r;
  char text[256];
  const char* s = fi_cq_strerror(cq_.get(), err.prov_errno, err.err_data, text, sizeof(text));
  last_error_ = absl::StrCat(fi_strerror(err.err), s != nullptr ? absl::StrCat(": ", s) : "");
  // An error no posted operation owns (the sockets provider reports one when an in-process
  // peer's endpoint closes mid-probe): callers map every context to their own operation, so it
  // is kept as the last error only (it crashed the responder in 1 of 18 repeated test runs).
  if (err.op_context == nullptr) return 0;
  out[0] = Completion{err.op_context, err.len, err.flags, err.err != 0 ? err.err : FI_EOTHER};
  return 1;
}

void Endpoint::Wait(std::chrono::microseconds timeout, int wake_fd) {
  const int ms = static_cast<int>(std::max<int64_t>((timeout.count() + 999) / 1000, 0));
  if (wait_fd_ >= 0) {
    // fi_trywait says whether blocking is safe: it fails when completions are queued or the
    // provider must be progressed first (manual progress), and then we return to poll.
    fid* fids[] = {&cq_->fid};
    if (fi_trywait(fabric_.get(), fids, 1) != FI_SUCCESS) return;
    pollfd fds[2] = {{wait_fd_, POLLIN, 0}, {wake_fd, POLLIN, 0}};
    ::poll(fds, wake_fd >= 0 ? 2 : 1, ms);
    return;
  }
  if (wake_fd >= 0) {
    pollfd fd = {wake_fd, POLLIN, 0};
    ::poll(&fd, 1, ms);
    return;
  }
  std::this_thread::sleep_for(timeout);
}

}  // namespace efawatch::fabric
