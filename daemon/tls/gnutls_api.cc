// SPDX-License-Identifier: Apache-2.0
#include "daemon/tls/gnutls_api.h"

#include "lib/common/shared_library.h"

namespace efawatch::tls {
namespace {

absl::StatusOr<GnutlsApi> Load() {
  auto lib = common::SharedLibrary::Open("libgnutls.so.30");
  if (!lib.ok()) return lib.status();
  GnutlsApi g;
  for (const absl::Status& st : {
           lib->Bind("gnutls_certificate_allocate_credentials", &g.allocate_credentials),
           lib->Bind("gnutls_certificate_free_credentials", &g.free_credentials),
           lib->Bind("gnutls_certificate_set_x509_key_mem", &g.set_x509_key_mem),
           lib->Bind("gnutls_certificate_set_x509_trust_mem", &g.set_x509_trust_mem),
           lib->Bind("gnutls_certificate_get_peers", &g.get_peers),
           lib->Bind("gnutls_certificate_verify_peers2", &g.verify_peers2),
           lib->Bind("gnutls_certificate_verification_status_print", &g.verification_status_print),
           lib->Bind("gnutls_x509_crt_list_import2", &g.crt_list_import2),
           lib->Bind("gnutls_x509_crt_get_expiration_time", &g.crt_get_expiration_time),
           lib->Bind("gnutls_x509_crt_deinit", &g.crt_deinit),
           lib->Bind("gnutls_strerror", &g.strerror),
           lib->Bind("gnutls_free", &g.free),
       }) {
    if (!st.ok()) return st;
  }
  return g;
}

}  // namespace

absl::StatusOr<const GnutlsApi*> GnutlsApi::Get() { return common::LoadOnce<&Load>(); }

}  // namespace efawatch::tls
