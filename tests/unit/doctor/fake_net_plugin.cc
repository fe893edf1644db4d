// SPDX-License-Identifier: Apache-2.0
// A stand-in for aws-ofi-nccl in the doctor's fixture roots: a real ELF shared object that
// needs libfabric.so.1 and exports the symbol name a v8 net plugin exports.
extern "C" {
extern const int ncclNetPlugin_v8;
const int ncclNetPlugin_v8 = 8;
}
