// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include <string>

#include "absl/status/statusor.h"

namespace efawatch::tls {

/// The GnuTLS functions the agent calls (certificate checks here, HTTPS in daemon/export), bound
/// from libgnutls.so.30 where they are first needed rather than linked: an agent without TLS
/// files never maps GnuTLS and its dependencies (p11-kit, nettle, gmp, libtasn1...: 2.5 MiB of an
/// idle agent's RSS; lib/common/shared_library.h). Each pointer keeps the declared type.
struct GnutlsApi {
  decltype(&gnutls_certificate_allocate_credentials) allocate_credentials = nullptr;
  decltype(&gnutls_certificate_free_credentials) free_credentials = nullptr;
  decltype(&gnutls_certificate_set_x509_key_mem) set_x509_key_mem = nullptr;
  decltype(&gnutls_certificate_set_x509_trust_mem) set_x509_trust_mem = nullptr;
  decltype(&gnutls_certificate_get_peers) get_peers = nullptr;
  decltype(&gnutls_certificate_verify_peers2) verify_peers2 = nullptr;
  decltype(&gnutls_certificate_verification_status_print) verification_status_print = nullptr;
  decltype(&gnutls_x509_crt_list_import2) crt_list_import2 = nullptr;
  decltype(&gnutls_x509_crt_get_expiration_time) crt_get_expiration_time = nullptr;
  decltype(&gnutls_x509_crt_deinit) crt_deinit = nullptr;
  decltype(&gnutls_strerror) strerror = nullptr;
  gnutls_free_function* free = nullptr;  // a variable in GnuTLS: the function is *free

  /// Opens and binds on the first call in the process (thread-safe; a failure, naming the
  /// library or symbol, is kept too).
  static absl::StatusOr<const GnutlsApi*> Get();
};

/// A GnuTLS view of a string's bytes (GnuTLS does not write through it).
inline gnutls_datum_t Datum(const std::string& s) {
  return {reinterpret_cast<unsigned char*>(const_cast<char*>(s.data())),
          static_cast<unsigned>(s.size())};
}

}  // namespace efawatch::tls
