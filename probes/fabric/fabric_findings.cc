// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/fabric_findings.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"

namespace efawatch::fabric {

unsigned CountEfaDevicesForLibfabric(const std::string& sysfs) {
  unsigned n = 0;
  std::error_code ec;
  for (const auto& dev : std::filesystem::directory_iterator(sysfs + "/class/infiniband", ec)) {
    std::string vendor;
    std::ifstream(dev.path() / "device" / "vendor") >> vendor;
    if (vendor == "0x1d0f") ++n;  // Amazon; see the reference notes §1.1.
  }
  return n;
}

bool IsLoopbackAddress(const std::string& printable) {
  // Printable forms differ per provider ("fi_sockaddr_in://127.0.0.1:4000", "127.0.0.1:4000",
  // "fi_sockaddr_in6://[::1]:4000"); the host part is all that matters.
  std::string host = printable;
  if (auto p = host.find("://"); p != std::string::npos) host = host.substr(p + 3);
  return host.starts_with("127.") || host.starts_with("[::1]") || host.starts_with("::1");
}

std::vector<common::Finding> EvaluateFabricFindings(const FabricFindingInputs& in) {
  std::vector<common::Finding> out;
  if (!in.has_responder) return out;
  const std::string subject = absl::StrCat(in.responder.provider, "/", in.responder.domain);
  if (in.efa_devices > 0 && in.responder.provider != "efa") {
    common::Finding f;
    f.kind = KindName(common::FindingKind::kFabricNotOnEfa);
    f.severity = common::Severity::kWarning;
    f.subject = subject;
    f.message = absl::StrCat("node has ", in.efa_devices,
                             " EFA device(s) but the fabric "
                             "responder runs on provider '",
                             in.responder.provider,
                             "': libfabric did not open EFA (device access, provider list, "
                             "or libfabric build)");
    f.evidence.source = "fabric responder";
    f.evidence.text =
        absl::StrCat("provider=", in.responder.provider, " fabric=", in.responder.fabric,
                     " domain=", in.responder.domain);
    out.push_back(std::move(f));
  }
  const bool loopback = in.responder.domain == "lo" || IsLoopbackAddress(in.responder_printable);
  if (loopback) {
    for (const PeerProbeState& p : in.peers) {
      if (IsLoopbackAddress(p.peer)) continue;
      common::Finding f;
      f.kind = KindName(common::FindingKind::kFabricLoopbackAddress);
      f.severity = common::Severity::kWarning;
      f.subject = subject;
      f.message = absl::StrCat("the fabric responder listens on loopback (", in.responder_printable,
                               ") but peer ", p.peer,
                               " is remote: other nodes cannot probe this one (set "
                               "--fabric-interface)");
      f.evidence.source = "fabric probes";
      f.evidence.text = absl::StrCat("remote peer ", p.peer);
      out.push_back(std::move(f));
      break;
    }
  }
  return out;
}

}  // namespace efawatch::fabric
