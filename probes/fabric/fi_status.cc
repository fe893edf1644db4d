// SPDX-License-Identifier: Apache-2.0
#include "probes/fabric/fi_status.h"

#include <rdma/fi_errno.h>

#include "absl/strings/str_cat.h"

namespace efawatch::fabric {
namespace {

// The libfabric codes we can act on map to the absl code a caller would branch on; everything
// else is an internal failure of the fabric stack.
absl::StatusCode CodeFor(int err) {
  switch (err) {
    case FI_ENODATA:
    case FI_ENOENT:
      return absl::StatusCode::kNotFound;
    case FI_EINVAL:
    case FI_EBADFLAGS:
    case FI_ETOOSMALL:
      return absl::StatusCode::kInvalidArgument;
    case FI_ENOSYS:
    case FI_EOPNOTSUPP:
      return absl::StatusCode::kUnimplemented;
    case FI_EAGAIN:
    case FI_ECONNREFUSED:
    case FI_ECONNRESET:
    case FI_EHOSTUNREACH:
      return absl::StatusCode::kUnavailable;
    case FI_ETIMEDOUT:
      return absl::StatusCode::kDeadlineExceeded;
    case FI_ENOMEM:
      return absl::StatusCode::kResourceExhausted;
    case FI_EPERM:
    case FI_EACCES:
      return absl::StatusCode::kPermissionDenied;
    case FI_ECANCELED:
      return absl::StatusCode::kCancelled;
    default:
      return absl::StatusCode::kInternal;
  }
}

}  // namespace

absl::Status FiStatus(absl::string_view call, long ret) {
  if (ret >= 0) return absl::OkStatus();
  const int err = static_cast<int>(-ret);
  return absl::Status(CodeFor(err), absl::StrCat(call, ": ", ret, " (", fi_strerror(err), ")"));
}

}  // namespace efawatch::fabric
