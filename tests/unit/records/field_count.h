// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>

namespace efawatch::testing {

// The number of fields of an aggregate, counted by how many initializers it accepts. Record
// tests compare it with what their codecs map, so a field added to a record fails them.
struct AnyField {
  template <typename T>
  operator T() const;  // NOLINT(google-explicit-constructor): only used unevaluated
};

template <typename T, typename... A>
constexpr size_t FieldCount() {
  if constexpr (requires { T{A{}..., AnyField{}}; }) {
    return FieldCount<T, A..., AnyField>();
  } else {
    return sizeof...(A);
  }
}

}  // namespace efawatch::testing
