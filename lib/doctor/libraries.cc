// SPDX-License-Identifier: Apache-2.0
#include "lib/doctor/libraries.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>
#include <string_view>

namespace efawatch::doctor {
namespace {

namespace fs = std::filesystem;

// The lines of /etc/ld.so.conf and its include directory that name directories.
void AddLdSoConf(const Target& t, std::vector<fs::path>* dirs) {
  std::vector<fs::path> files = {InRoot(t, "/etc/ld.so.conf")};
  std::error_code ec;
  std::vector<fs::path> conf_d;
  for (const auto& e : fs::directory_iterator(InRoot(t, "/etc/ld.so.conf.d"), ec)) {
    if (e.path().extension() == ".conf") conf_d.push_back(e.path());
  }
  std::sort(conf_d.begin(), conf_d.end());
  files.insert(files.end(), conf_d.begin(), conf_d.end());
  for (const auto& f : files) {
    std::ifstream in(f);
    std::string line;
    while (std::getline(in, line)) {
      line = line.substr(0, line.find('#'));
      while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
      if (line.empty() || line.front() != '/') continue;  // "include" lines are the conf.d
      dirs->push_back(line);
    }
  }
}

// A read-only view of a whole file; empty when it cannot be mapped.
class MappedFile {
 public:
  explicit MappedFile(const fs::path& path) {
    const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    struct stat st {};
    if (fstat(fd, &st) == 0 && st.st_size > 0 && S_ISREG(st.st_mode)) {
      void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p != MAP_FAILED) {
        data_ = static_cast<const char*>(p);
        size_ = static_cast<size_t>(st.st_size);
      }
    }
    close(fd);
  }
  ~MappedFile() {
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
  }
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::string_view view() const { return {data_, size_}; }

 private:
  const char* data_ = nullptr;
  size_t size_ = 0;
};

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The file offset of virtual address `vaddr`, from the PT_LOAD segments.
std::optional<uint64_t> FileOffset(std::string_view f, const Elf64_Ehdr& eh, uint64_t vaddr) {
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    const uint64_t off = eh.e_phoff + uint64_t{i} * eh.e_phentsize;
    if (off + sizeof(ph) > f.size()) return std::nullopt;
    memcpy(&ph, f.data() + off, sizeof(ph));
    if (ph.p_type == PT_LOAD && vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
      return vaddr - ph.p_vaddr + ph.p_offset;
    }
  }
  return std::nullopt;
}

}  // namespace

fs::path InRoot(const Target& t, const std::string& path) {
  if (!t.sys.empty() && path.starts_with("/sys/")) return t.sys / path.substr(5);
  return t.root / fs::path(path).relative_path();
}

std::vector<fs::path> SearchDirs(const Target& t) {
  std::vector<fs::path> dirs;
  if (auto it = t.env.find("LD_LIBRARY_PATH"); it != t.env.end()) {
    std::stringstream ss(it->second);
    std::string d;
    while (std::getline(ss, d, ':')) {
      if (!d.empty()) dirs.emplace_back(d);
    }
  }
  AddLdSoConf(t, &dirs);
  for (const char* d :
       {"/opt/amazon/efa/lib", "/opt/amazon/efa/lib64", "/opt/amazon/ofi-nccl/lib",
        "/opt/amazon/ofi-nccl/lib64", "/opt/aws-ofi-nccl/lib", "/usr/local/cuda/lib64",
        "/usr/local/cuda/lib", "/usr/local/lib", "/lib/x86_64-linux-gnu",
        "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}) {
    dirs.emplace_back(d);
  }
  return dirs;
}

std::vector<std::string> FindLibraries(const Target& t, const std::string& prefix) {
  std::vector<fs::path> dirs = SearchDirs(t);
  // pip's NCCL wheel (nvidia-nccl-cu*), loaded by PyTorch through its RPATH.
  std::error_code ec;
  for (const char* base : {"/usr/local/lib", "/usr/lib", "/opt/conda/lib"}) {
    for (const auto& e : fs::directory_iterator(InRoot(t, base), ec)) {
      if (!e.path().filename().string().starts_with("python3")) continue;
      for (const char* sub : {"dist-packages", "site-packages"}) {
        dirs.push_back(fs::path(base) / e.path().filename() / sub / "nvidia/nccl/lib");
      }
    }
  }
  std::vector<std::string> found;
  std::set<fs::path> seen;  // one entry per real file (symlinks and repeated directories)
  for (const fs::path& d : dirs) {
    std::vector<fs::path> here;
    for (const auto& e : fs::directory_iterator(InRoot(t, d.string()), ec)) {
      const std::string name = e.path().filename().string();
      if (name.starts_with(prefix) && name.find(".so") != std::string::npos) {
        here.push_back(e.path().filename());
      }
    }
    // Versioned names first: libnccl.so.2 (what the loader asks for) before the libnccl.so link.
    std::sort(here.begin(), here.end(), std::greater<>());
    for (const fs::path& name : here) {
      const fs::path real = fs::weakly_canonical(InRoot(t, (d / name).string()), ec);
      if (!fs::is_regular_file(real, ec) || !seen.insert(real).second) continue;
      found.push_back((d / name).string());
    }
  }
  return found;
}

std::optional<std::vector<std::string>> NeededLibraries(const fs::path& file) {
  MappedFile m(file);
  const std::string_view f = m.view();
  Elf64_Ehdr eh;
  if (f.size() < sizeof(eh) || memcmp(f.data(), ELFMAG, SELFMAG) != 0 ||
      f[EI_CLASS] != ELFCLASS64) {
    return std::nullopt;
  }
  memcpy(&eh, f.data(), sizeof(eh));
  std::vector<uint64_t> needed;
  uint64_t strtab = 0;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    const uint64_t off = eh.e_phoff + uint64_t{i} * eh.e_phentsize;
    if (off + sizeof(ph) > f.size()) return std::nullopt;
    memcpy(&ph, f.data() + off, sizeof(ph));
    if (ph.p_type != PT_DYNAMIC) continue;
    for (uint64_t d = ph.p_offset;
         d + sizeof(Elf64_Dyn) <= ph.p_offset + ph.p_filesz && d + sizeof(Elf64_Dyn) <= f.size();
         d += sizeof(Elf64_Dyn)) {
      Elf64_Dyn dyn;
      memcpy(&dyn, f.data() + d, sizeof(dyn));
      if (dyn.d_tag == DT_NULL) break;
      if (dyn.d_tag == DT_NEEDED) needed.push_back(dyn.d_un.d_val);
      if (dyn.d_tag == DT_STRTAB) strtab = dyn.d_un.d_ptr;
    }
  }
  const auto str_off = FileOffset(f, eh, strtab);
  if (!str_off) return std::nullopt;
  std::vector<std::string> names;
  for (uint64_t n : needed) {
    if (*str_off + n >= f.size()) continue;
    const char* s = f.data() + *str_off + n;
    names.emplace_back(s, strnlen(s, f.size() - (*str_off + n)));
  }
  return names;
}

std::string NcclVersionInFile(const fs::path& file) {
  MappedFile m(file);
  const std::string_view f = m.view();
  for (size_t at = f.find("+cuda"); at != std::string_view::npos; at = f.find("+cuda", at + 1)) {
    size_t b = at;
    int dots = 0;
    while (b > 0 && (IsDigit(f[b - 1]) || f[b - 1] == '.')) {
      dots += f[b - 1] == '.';
      --b;
    }
    if (dots == 2 && b < at && IsDigit(f[b])) return std::string(f.substr(b, at - b));
  }
  return "";
}

std::vector<int> NetPluginVersions(const fs::path& file) {
  MappedFile m(file);
  const std::string_view f = m.view();
  constexpr std::string_view kSym = "ncclNetPlugin_v";
  std::set<int> versions;
  for (size_t at = f.find(kSym); at != std::string_view::npos; at = f.find(kSym, at + 1)) {
    size_t e = at + kSym.size();
    int v = 0;
    while (e < f.size() && IsDigit(f[e]) && v < 1000) v = v * 10 + (f[e++] - '0');
    if (e > at + kSym.size() && (e == f.size() || f[e] == '\0')) versions.insert(v);
  }
  return {versions.begin(), versions.end()};
}

}  // namespace efawatch::doctor
