// SPDX-License-Identifier: Apache-2.0
#include "cli/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <mutex>
#include <string>

#include "absl/status/status.h"

namespace efawatch::cli {
namespace {

// The live mappings, for the SIGBUS handler: plain atomics, as a handler may read nothing else.
// A few slots are enough (analyze maps one file at a time); Map() fails past them and the
// caller reads the file instead.
struct Slot {
  std::atomic<bool> claimed{false};        // owned by a MappedFile
  std::atomic<const char*> base{nullptr};  // set once size and shrank are
  std::atomic<size_t> size{0};
  std::atomic<bool> shrank{false};
};
std::array<Slot, 8> g_slots;
std::atomic<size_t> g_page_size{4096};
struct sigaction g_previous {};

// A fault inside a live mapping: the file ended before the page. Zero pages from there to the
// mapping's end let the read go on (a page of NULs is junk to the analyzer, not a crash).
// Anything else goes to the handler that was there before, or the default action.
void OnSigbus(int sig, siginfo_t* info, void* context) {
  const auto* fault = static_cast<const char*>(info->si_addr);
  if (info->si_code > 0) {  // raised by a fault, not sent by kill()
    for (Slot& s : g_slots) {
      const char* base = s.base.load(std::memory_order_acquire);
      const size_t size = s.size.load(std::memory_order_acquire);
      if (base == nullptr || fault < base || fault >= base + size) continue;
      // The mapping starts on a page boundary, so pages are counted from its base.
      const size_t page = g_page_size.load(std::memory_order_relaxed);
      const size_t from = static_cast<size_t>(fault - base) / page * page;
      void* zero = mmap(const_cast<char*>(base + from), size - from, PROT_READ,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
      if (zero != MAP_FAILED) {
        s.shrank.store(true, std::memory_order_release);
        return;  // the read is retried and finds zeros
      }
    }
  }
  if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
    g_previous.sa_sigaction(sig, info, context);
    return;
  }
  if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
      g_previous.sa_handler != nullptr) {
    g_previous.sa_handler(sig);
    return;
  }
  // The default action: a fault raises SIGBUS again on return and now terminates; a sent one
  // is raised here and delivered once the handler returns.
  signal(SIGBUS, SIG_DFL);
  if (info->si_code <= 0) raise(SIGBUS);
}

absl::Status InstallHandler() {
  static std::once_flag once;
  static int error = 0;
  std::call_once(once, [] {
    const long page = sysconf(_SC_PAGESIZE);
    if (page > 0) g_page_size.store(static_cast<size_t>(page));
    struct sigaction sa {};
    sa.sa_sigaction = OnSigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &g_previous) != 0) error = errno;
  });
  if (error != 0) return absl::InternalError(std::string("sigaction: ") + std::strerror(error));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<MappedFile>> MappedFile::Map(int fd, uint64_t size) {
  if (size == 0 || size > SIZE_MAX) return absl::InvalidArgumentError("nothing to map");
  if (absl::Status s = InstallHandler(); !s.ok()) return s;
  void* p = mmap(nullptr, static_cast<size_t>(size), PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return absl::InternalError(std::string("mmap: ") + std::strerror(errno));
  for (size_t i = 0; i < g_slots.size(); ++i) {
    bool taken = false;
    if (!g_slots[i].claimed.compare_exchange_strong(taken, true, std::memory_order_acq_rel)) {
      continue;
    }
    g_slots[i].size.store(static_cast<size_t>(size), std::memory_order_release);
    g_slots[i].shrank.store(false, std::memory_order_release);
    g_slots[i].base.store(static_cast<const char*>(p), std::memory_order_release);
    return std::unique_ptr<MappedFile>(
        new MappedFile(i, static_cast<const char*>(p), static_cast<size_t>(size)));
  }
  munmap(p, static_cast<size_t>(size));
  return absl::ResourceExhaustedError("too many files mapped at once");
}

MappedFile::~MappedFile() {
  g_slots[slot_].base.store(nullptr, std::memory_order_release);
  munmap(const_cast<char*>(base_), size_);
  g_slots[slot_].claimed.store(false, std::memory_order_release);
}

std::string_view MappedFile::data() const { return {base_, size_}; }

bool MappedFile::shrank() const { return g_slots[slot_].shrank.load(std::memory_order_acquire); }

}  // namespace efawatch::cli
