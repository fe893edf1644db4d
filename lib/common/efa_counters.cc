// SPDX-License-Identifier: Apache-2.0
#include "lib/common/efa_counters.h"

namespace efawatch::efa {

const std::vector<KnownCounter>& KnownCounters() {
  static const std::vector<KnownCounter> counters = {
      {"tx_bytes", Scope::kPort, "Bytes transmitted by the EFA port.", false},
      {"tx_pkts", Scope::kPort, "Packets transmitted by the EFA port.", false},
      {"rx_bytes", Scope::kPort, "Bytes received by the EFA port.", false},
      {"rx_pkts", Scope::kPort, "Packets received by the EFA port.", false},
      {"rx_drops", Scope::kPort, "Packets received and then dropped.", true},
      {"send_bytes", Scope::kPort, "Bytes sent by send operations.", false},
      {"send_wrs", Scope::kPort, "Send work requests completed.", false},
      {"recv_bytes", Scope::kPort, "Bytes received by receive operations.", false},
      {"recv_wrs", Scope::kPort, "Receive work requests completed.", false},
      {"rdma_read_wrs", Scope::kPort, "RDMA read work requests completed.", false},
      {"rdma_read_bytes", Scope::kPort, "Bytes received by RDMA read.", false},
      {"rdma_read_wr_err", Scope::kPort, "RDMA read work request errors.", true},
      {"rdma_read_resp_bytes", Scope::kPort, "Bytes sent in RDMA read responses.", false},
      {"rdma_write_wrs", Scope::kPort, "RDMA write work requests completed.", false},
      {"rdma_write_bytes", Scope::kPort, "Bytes written by RDMA write.", false},
      {"rdma_write_wr_err", Scope::kPort, "RDMA write work request errors.", true},
      {"rdma_write_recv_bytes", Scope::kPort, "Bytes received by RDMA write (target side).", false},
      {"retrans_bytes", Scope::kPort, "SRD bytes retransmitted.", false},
      {"retrans_pkts", Scope::kPort, "SRD packets retransmitted.", false},
      {"retrans_timeout_events", Scope::kPort,
       "Times SRD traffic timed out and changed network path.", true},
      {"unresponsive_remote_events", Scope::kPort,
       "Times an SRD remote connection was unresponsive.", true},
      {"impaired_remote_conn_events", Scope::kPort,
       "Times SRD connections entered an impaired, rate-limited state.", true},
      {"submitted_cmds", Scope::kDevice,
       "Admin commands submitted (rises with every port counter read).", false},
      {"completed_cmds", Scope::kDevice, "Admin commands completed.", false},
      {"cmds_err", Scope::kDevice, "Admin commands that failed or returned an error.", true},
      {"no_completion_cmds", Scope::kDevice,
       "Admin commands that timed out with no completion; the driver stops its admin queue.", true},
      {"keep_alive_rcvd", Scope::kDevice, "Keep-alive events received from the device.", false},
      {"alloc_pd_err", Scope::kDevice, "Protection domain allocation failures.", true},
      {"create_qp_err", Scope::kDevice, "Queue pair creation failures.", true},
      {"create_cq_err", Scope::kDevice, "Completion queue creation failures.", true},
      {"reg_mr_err", Scope::kDevice, "Memory registration failures (often the memlock limit).",
       true},
      {"alloc_ucontext_err", Scope::kDevice, "User context allocation failures.", true},
      {"create_ah_err", Scope::kDevice, "Address handle creation failures.", true},
      {"mmap_err", Scope::kDevice, "mmap failures.", true},
      {"alloc_mr_err", Scope::kDevice, "Kernel-verbs memory region allocation failures.", true},
      {"get_dma_mr_err", Scope::kDevice, "Kernel-verbs DMA memory region failures.", true},
  };
  return counters;
}

const KnownCounter* FindKnownCounter(std::string_view name) {
  for (const auto& c : KnownCounters()) {
    if (c.name == name) return &c;
  }
  return nullptr;
}

}  // namespace efawatch::efa
