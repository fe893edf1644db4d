// SPDX-License-Identifier: Apache-2.0
// The NCCL backend (built with CUDA and NCCL). One rank per local GPU, driven from one thread
// with group calls; communicators are non-blocking so that every wait is a poll with a deadline:
// a dead peer ends in ncclCommAbort, never in a hang.

#include "probes/collective/nccl_backend.h"

#include <cuda_runtime_api.h>
#include <nccl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "lib/common/shared_library.h"

namespace efawatch::collective {
namespace {

using Clock = std::chrono::steady_clock;

// What the backend calls in the CUDA runtime and in NCCL. Both are opened at the first NCCL
// join rather than named in the executable: mapped at start they are 1.4 MiB of the RSS of every
// agent, most of which never run an NCCL probe (lib/common/shared_library.h).
// clang-format off: one function a line
#define EFAWATCH_CUDART_FUNCTIONS(X) \
  X(cudaGetErrorString)              \
  X(cudaGetDeviceCount)              \
  X(cudaSetDevice)                   \
  X(cudaStreamCreateWithFlags)       \
  X(cudaFree)                        \
  X(cudaStreamDestroy)               \
  X(cudaStreamQuery)                 \
  X(cudaEventDestroy)                \
  X(cudaEventRecord)                 \
  X(cudaEventElapsedTime)            \
  X(cudaMemcpy)
#define EFAWATCH_NCCL_FUNCTIONS(X) \
  X(ncclGetErrorString)            \
  X(ncclGetUniqueId)               \
  X(ncclCommInitRankConfig)        \
  X(ncclGroupStart)                \
  X(ncclGroupEnd)                  \
  X(ncclCommGetAsyncError)         \
  X(ncclCommAbort)                 \
  X(ncclCommDestroy)               \
  X(ncclAllReduce)                 \
  X(ncclAllGather)                 \
  X(ncclReduceScatter)             \
  X(ncclBroadcast)
// clang-format on
// The name as the header spells it after its own macros (a header may map a name to a _v2).
#define EFAWATCH_NAME(f) EFAWATCH_NAME2(f)
#define EFAWATCH_NAME2(f) #f
// NOLINTNEXTLINE(bugprone-macro-parentheses): `f` names the member; it cannot be parenthesized
#define EFAWATCH_DECLARE(f) decltype(&::f) f = nullptr;

struct GpuLibraries {
  EFAWATCH_CUDART_FUNCTIONS(EFAWATCH_DECLARE)
  EFAWATCH_NCCL_FUNCTIONS(EFAWATCH_DECLARE)
  // Overloaded in C++ by cuda_runtime.h (which nccl.h includes): the C functions' types.
  cudaError_t (*cudaMalloc)(void**, size_t) = nullptr;
  cudaError_t (*cudaEventCreate)(cudaEvent_t*) = nullptr;
};

absl::StatusOr<GpuLibraries> OpenGpuLibraries() {
  GpuLibraries g;
  // By name first (LD_LIBRARY_PATH, ldconfig: where the NVIDIA container toolkit puts them),
  // then where the build found them.
  const auto open = [](const char* soname,
                       const char* build_dir) -> absl::StatusOr<common::SharedLibrary> {
    auto lib = common::SharedLibrary::Open(soname);
    if (lib.ok() || build_dir[0] == '\0') return lib;
    auto again = common::SharedLibrary::Open(absl::StrCat(build_dir, "/", soname));
    return again.ok() ? again : lib;
  };
  auto cudart = open(EFAWATCH_CUDART_SONAME, EFAWATCH_CUDART_DIR);
  if (!cudart.ok()) return cudart.status();
  auto nccl = open(EFAWATCH_NCCL_SONAME, EFAWATCH_NCCL_DIR);
  if (!nccl.ok()) return nccl.status();
#define EFAWATCH_BIND_CUDART(f) \
  if (auto st = cudart->Bind(EFAWATCH_NAME(f), &g.f); !st.ok()) return st;
#define EFAWATCH_BIND_NCCL(f) \
  if (auto st = nccl->Bind(EFAWATCH_NAME(f), &g.f); !st.ok()) return st;
  EFAWATCH_CUDART_FUNCTIONS(EFAWATCH_BIND_CUDART)
  EFAWATCH_NCCL_FUNCTIONS(EFAWATCH_BIND_NCCL)
  EFAWATCH_BIND_CUDART(cudaMalloc)
  EFAWATCH_BIND_CUDART(cudaEventCreate)
  return g;
}

absl::StatusOr<const GpuLibraries*> LoadGpuLibraries() {
  return common::LoadOnce<&OpenGpuLibraries>();
}

absl::Status CudaError(const GpuLibraries& lib, const char* what, cudaError_t e) {
  return absl::InternalError(absl::StrCat(what, ": ", lib.cudaGetErrorString(e)));
}
absl::Status NcclError(const GpuLibraries& lib, const char* what, ncclResult_t r) {
  return absl::InternalError(absl::StrCat(what, ": ", lib.ncclGetErrorString(r)));
}

// NCCL reads NCCL_DEBUG and NCCL_DEBUG_FILE once per process, at its first call. The agent's
// probe log therefore is one file per agent process; each probe analyzes what it appended.
std::filesystem::path SetUpNcclLog(const std::filesystem::path& dir) {
  static std::once_flag once;
  static std::filesystem::path path;
  std::call_once(once, [&dir] {
    path = dir / absl::StrCat("nccl-probe-", getpid(), ".log");
    ::setenv("NCCL_DEBUG", "INFO", /*overwrite=*/1);
    ::setenv("NCCL_DEBUG_FILE", path.c_str(), 1);
  });
  return path;
}

uint64_t FileSize(const std::filesystem::path& p) {
  std::error_code ec;
  const auto n = std::filesystem::file_size(p, ec);
  return ec ? 0 : n;
}

float ReduceInput(uint64_t rank, uint64_t i) {
  return static_cast<float>((rank + 1) * ((i % 7) + 1));
}
float GatherValue(uint64_t rank, uint64_t j) { return static_cast<float>(rank * 10 + (j % 3) + 1); }

class NcclBackend final : public RankBackend {
 public:
  static absl::StatusOr<std::unique_ptr<RankBackend>> Create(const JoinRequest& j,
                                                             const NcclBackendOptions& o) {
    auto libs = LoadGpuLibraries();
    if (!libs.ok()) {
      return absl::FailedPreconditionError(
          absl::StrCat("no GPU for the NCCL backend: ", libs.status().message()));
    }
    auto b = std::unique_ptr<NcclBackend>(new NcclBackend());
    b->lib_ = *libs;
    b->log_ = SetUpNcclLog(o.log_dir);
    b->log_offset_ = FileSize(b->log_);
    int devices = 0;
    if (cudaError_t e = b->lib_->cudaGetDeviceCount(&devices); e != cudaSuccess) {
      return absl::FailedPreconditionError(absl::StrCat(
          "no GPU for the NCCL backend: cudaGetDeviceCount: ", b->lib_->cudaGetErrorString(e)));
    }
    if (devices == 0) return absl::FailedPreconditionError("no GPU for the NCCL backend");
    b->gpus_ = devices;
    b->max_bytes_ = 0;
    for (uint64_t s : j.sizes) b->max_bytes_ = std::max<uint64_t>(b->max_bytes_, s);
    if (j.rank == 0) {  // the first participant's agent hands out the communicator id
      if (ncclResult_t r = b->lib_->ncclGetUniqueId(&b->id_); r != ncclSuccess) {
        return NcclError(*b->lib_, "ncclGetUniqueId", r);
      }
      b->have_id_ = true;
    }
    return b;
  }

  ~NcclBackend() override {
    for (size_t g = 0; g < comms_.size(); ++g) {
      if (comms_[g] == nullptr) continue;
      lib_->cudaSetDevice(static_cast<int>(g));
      // A failed or aborted run leaves communicators that must not be destroyed normally.
      if (failed_) {
        lib_->ncclCommAbort(comms_[g]);
      } else {
        lib_->ncclCommDestroy(comms_[g]);
      }
    }
    for (size_t g = 0; g < send_.size(); ++g) {
      lib_->cudaSetDevice(static_cast<int>(g));
      lib_->cudaFree(send_[g]);
      lib_->cudaFree(recv_[g]);
      if (streams_[g] != nullptr) lib_->cudaStreamDestroy(streams_[g]);
    }
    if (start_ != nullptr) lib_->cudaEventDestroy(start_);
    if (stop_ != nullptr) lib_->cudaEventDestroy(stop_);
  }

  void Describe(JoinResponse* out) const override {
    out->local_ranks = static_cast<uint32_t>(gpus_);
    out->provider = "nccl";
    if (have_id_) out->nccl_unique_id = std::string(id_.internal, NCCL_UNIQUE_ID_BYTES);
  }

  absl::Status Connect(const StartRequest& start, const std::stop_token& stop,
                       Clock::time_point deadline) override {
    if (start.nccl_unique_id.size() != NCCL_UNIQUE_ID_BYTES) {
      return absl::InvalidArgumentError("NCCL unique id missing or malformed");
    }
    std::memcpy(id_.internal, start.nccl_unique_id.data(), NCCL_UNIQUE_ID_BYTES);
    nranks_ = static_cast<int>(start.nranks);
    first_rank_ = static_cast<int>(start.rank);
    comms_.assign(gpus_, nullptr);
    streams_.assign(gpus_, nullptr);
    send_.assign(gpus_, nullptr);
    recv_.assign(gpus_, nullptr);
    // all_gather's output and reduce_scatter's input span every rank: the largest buffer is S.
    for (int g = 0; g < gpus_; ++g) {
      if (auto e = lib_->cudaSetDevice(g); e != cudaSuccess)
        return CudaError(*lib_, "cudaSetDevice", e);
      if (auto e = lib_->cudaStreamCreateWithFlags(&streams_[g], cudaStreamNonBlocking);
          e != cudaSuccess) {
        return CudaError(*lib_, "cudaStreamCreate", e);
      }
      if (auto e = lib_->cudaMalloc(&send_[g], max_bytes_ + 4); e != cudaSuccess) {
        return CudaError(*lib_, "cudaMalloc", e);
      }
      if (auto e = lib_->cudaMalloc(&recv_[g], max_bytes_ + 4); e != cudaSuccess) {
        return CudaError(*lib_, "cudaMalloc", e);
      }
    }
    lib_->cudaSetDevice(0);
    lib_->cudaEventCreate(&start_);
    lib_->cudaEventCreate(&stop_);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    lib_->ncclGroupStart();
    for (int g = 0; g < gpus_; ++g) {
      lib_->cudaSetDevice(g);
      ncclResult_t r =
          lib_->ncclCommInitRankConfig(&comms_[g], nranks_, id_, first_rank_ + g, &config);
      if (r != ncclSuccess && r != ncclInProgress) {
        lib_->ncclGroupEnd();
        failed_ = true;
        return NcclError(*lib_, "ncclCommInitRankConfig", r);
      }
    }
    ncclResult_t r = lib_->ncclGroupEnd();
    if (r != ncclSuccess && r != ncclInProgress) {
      failed_ = true;
      return NcclError(*lib_, "ncclGroupEnd (init)", r);
    }
    return WaitComms("communicator init", stop, deadline);
  }

  absl::StatusOr<SizeTiming> Run(const OpInfo& op, uint64_t size, uint32_t warmup, uint32_t iters,
                                 const std::stop_token& stop, Clock::time_point deadline) override {
    const uint64_t count = op.Count(size, static_cast<uint32_t>(nranks_));
    if (count == 0) return absl::InvalidArgumentError("size below one element per rank");
    const uint64_t total = op.per_rank_chunks ? count * nranks_ : count;
    if (total * 4 > max_bytes_ + 4) return absl::InvalidArgumentError("size above the joined max");
    if (auto st = Fill(op, count); !st.ok()) return st;
    for (uint32_t i = 0; i < warmup; ++i) {
      if (auto st = Launch(op, count, stop, deadline); !st.ok()) return st;
    }
    if (auto st = Sync(stop, deadline); !st.ok()) return st;
    lib_->cudaSetDevice(0);
    lib_->cudaEventRecord(start_, streams_[0]);
    for (uint32_t i = 0; i < iters; ++i) {
      if (auto st = Launch(op, count, stop, deadline); !st.ok()) return st;
    }
    lib_->cudaSetDevice(0);
    lib_->cudaEventRecord(stop_, streams_[0]);
    if (auto st = Sync(stop, deadline); !st.ok()) return st;
    float ms = 0;
    lib_->cudaEventElapsedTime(&ms, start_, stop_);
    SizeTiming t;
    t.size = (op.per_rank_chunks ? count * nranks_ : count) * 4;
    t.time_us = static_cast<double>(ms) * 1e3 / std::max(1u, iters);
    auto wrong = Check(op, count);
    if (!wrong.ok()) return wrong.status();
    t.wrong = *wrong;
    return t;
  }

  void Observe(RankResult* out) override {
    out->nccl = ObserveNcclLog(log_, log_offset_);
    out->provider = out->nccl->verdict.ofi_provider;
  }

 private:
  NcclBackend() = default;

  // Polls every communicator until none is in progress; aborts them at the deadline or stop.
  absl::Status WaitComms(const char* what, const std::stop_token& stop,
                         Clock::time_point deadline) {
    for (;;) {
      bool pending = false;
      for (int g = 0; g < gpus_; ++g) {
        ncclResult_t state = ncclSuccess;
        lib_->ncclCommGetAsyncError(comms_[g], &state);
        if (state == ncclInProgress) {
          pending = true;
        } else if (state != ncclSuccess) {
          failed_ = true;
          return NcclError(*lib_, what, state);
        }
      }
      if (!pending) return absl::OkStatus();
      if (stop.stop_requested() || Clock::now() >= deadline) {
        failed_ = true;  // the destructor aborts the communicators
        return stop.stop_requested()
                   ? absl::AbortedError(absl::StrCat(what, ": aborted"))
                   : absl::DeadlineExceededError(absl::StrCat(what, ": deadline passed"));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }

  absl::Status Launch(const OpInfo& op, uint64_t count, const std::stop_token& stop,
                      Clock::time_point deadline) {
    lib_->ncclGroupStart();
    for (int g = 0; g < gpus_; ++g) {
      const float* s = static_cast<const float*>(send_[g]);
      float* r = static_cast<float*>(recv_[g]);
      ncclResult_t res = ncclSuccess;
      switch (op.op) {
        case Op::kAllReduce:
          res = lib_->ncclAllReduce(s, r, count, ncclFloat, ncclSum, comms_[g], streams_[g]);
          break;
        case Op::kAllGather:
          res = lib_->ncclAllGather(s, r, count, ncclFloat, comms_[g], streams_[g]);
          break;
        case Op::kReduceScatter:
          res = lib_->ncclReduceScatter(s, r, count, ncclFloat, ncclSum, comms_[g], streams_[g]);
          break;
        default:
          res = lib_->ncclBroadcast(s, r, count, ncclFloat, 0, comms_[g], streams_[g]);
          break;
      }
      if (res != ncclSuccess && res != ncclInProgress) {
        lib_->ncclGroupEnd();
        failed_ = true;
        return NcclError(*lib_, std::string(op.name).c_str(), res);
      }
    }
    ncclResult_t res = lib_->ncclGroupEnd();
    if (res != ncclSuccess && res != ncclInProgress) {
      failed_ = true;
      return NcclError(*lib_, "ncclGroupEnd", res);
    }
    return WaitComms("enqueue", stop, deadline);
  }

  // Waits for every stream by polling (cudaStreamSynchronize would wait forever on a hung
  // collective), watching the communicators for asynchronous errors meanwhile.
  absl::Status Sync(const std::stop_token& stop, Clock::time_point deadline) {
    for (;;) {
      bool busy = false;
      for (int g = 0; g < gpus_; ++g) {
        lib_->cudaSetDevice(g);
        const cudaError_t e = lib_->cudaStreamQuery(streams_[g]);
        if (e == cudaErrorNotReady) {
          busy = true;
        } else if (e != cudaSuccess) {
          failed_ = true;
          return CudaError(*lib_, "cudaStreamQuery", e);
        }
      }
      if (!busy) return absl::OkStatus();
      if (auto st = WaitComms("collective", stop, deadline); !st.ok()) return st;
      if (stop.stop_requested() || Clock::now() >= deadline) {
        failed_ = true;
        return absl::DeadlineExceededError("collective did not complete by the deadline");
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  absl::Status Fill(const OpInfo& op, uint64_t count) {
    const uint64_t in_elems = op.op == Op::kReduceScatter ? count * nranks_ : count;
    std::vector<float> host(in_elems);
    for (int g = 0; g < gpus_; ++g) {
      const uint64_t rank = first_rank_ + g;
      for (uint64_t i = 0; i < in_elems; ++i) {
        host[i] = op.op == Op::kAllGather   ? GatherValue(rank, i)
                  : op.op == Op::kBroadcast ? (rank == 0 ? static_cast<float>((i % 5) + 1) : 0.f)
                                            : ReduceInput(rank, i);
      }
      lib_->cudaSetDevice(g);
      if (auto e = lib_->cudaMemcpy(send_[g], host.data(), in_elems * 4, cudaMemcpyHostToDevice);
          e != cudaSuccess) {
        return CudaError(*lib_, "cudaMemcpy", e);
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<uint64_t> Check(const OpInfo& op, uint64_t count) {
    const uint64_t out_elems = op.op == Op::kAllGather ? count * nranks_ : count;
    std::vector<float> host(out_elems);
    const float n = static_cast<float>(nranks_);
    uint64_t wrong = 0;
    for (int g = 0; g < gpus_; ++g) {
      lib_->cudaSetDevice(g);
      if (auto e = lib_->cudaMemcpy(host.data(), recv_[g], out_elems * 4, cudaMemcpyDeviceToHost);
          e != cudaSuccess) {
        return CudaError(*lib_, "cudaMemcpy", e);
      }
      const uint64_t rank = first_rank_ + g;
      for (uint64_t i = 0; i < out_elems; ++i) {
        float want = 0;
        switch (op.op) {
          case Op::kAllReduce:
            want = n * (n + 1) / 2 * static_cast<float>((i % 7) + 1);
            break;
          case Op::kAllGather:
            want = GatherValue(i / count, i % count);
            break;
          case Op::kReduceScatter:
            want = n * (n + 1) / 2 * static_cast<float>(((rank * count + i) % 7) + 1);
            break;
          default:
            want = static_cast<float>((i % 5) + 1);
            break;
        }
        wrong += host[i] != want;
      }
    }
    return wrong;
  }

  const GpuLibraries* lib_ = nullptr;
  std::filesystem::path log_;
  uint64_t log_offset_ = 0;
  int gpus_ = 0;
  int nranks_ = 0;
  int first_rank_ = 0;
  uint64_t max_bytes_ = 0;
  ncclUniqueId id_{};
  bool have_id_ = false;
  bool failed_ = false;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  std::vector<void*> send_, recv_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

}  // namespace

bool NcclBackendBuilt() { return true; }

absl::Status LoadNcclLibraries() { return LoadGpuLibraries().status(); }

BackendFactory NcclBackendFactory(const NcclBackendOptions& options) {
  return [options](const JoinRequest& j) { return NcclBackend::Create(j, options); };
}

}  // namespace efawatch::collective
