// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "efawatch/v1/agent.grpc.pb.h"
#include "tests/support/subprocess.h"

namespace efawatch::testing {

/// A real efawatchd on 127.0.0.1 (ports picked by the kernel, read from its port file), with a
/// temporary directory for its state, pod logs and sysfs root, and the fabric on `provider`
/// pinned to `interface`. Killed by the destructor if still running.
class AgentProcess {
 public:
  explicit AgentProcess(const std::string& provider = "tcp", const std::string& interface = "lo",
                        const std::vector<std::string>& extra_args = {});
  bool ok() const { return grpc_ != 0; }
  std::string grpc_address() const { return "127.0.0.1:" + std::to_string(grpc_); }
  int metrics_port() const { return metrics_; }
  int grpc_port() const { return grpc_; }
  Subprocess& proc() { return *proc_; }
  std::unique_ptr<v1::Agent::Stub> Stub() const;

 private:
  TempDir dir_;
  std::unique_ptr<Subprocess> proc_;
  int metrics_ = 0;
  int grpc_ = 0;
};

}  // namespace efawatch::testing
