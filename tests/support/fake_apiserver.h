// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <memory>
#include <string>

#include "tests/support/subprocess.h"

namespace efawatch::testing {

/// Starts the fake Kubernetes API server (tests/component/mesh/fake_apiserver.py) on a loopback
/// port the kernel picks, over TLS with certificates made in `dir` (MakeTestCertificates). It
/// expects the bearer token in dir/token ("secret-token"; dir/client-token holds the same for the
/// client), serves dir/objects.json (written by the caller, before or after) and logs requests
/// to dir/requests. Returns "" and sets `*server` and `*url` (https://127.0.0.1:PORT), or why not.
std::string StartFakeApiServer(const TempDir& dir, std::unique_ptr<Subprocess>* server,
                               std::string* url);

}  // namespace efawatch::testing
