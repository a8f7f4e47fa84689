// One Philox-4x32-10 block, shared by the CPU generator (random.cpp) and the CUDA kernels (kernels_array.cu): the
// same (seed, stream, block) gives the same four words on either backend.
#pragma once

#include <cstdint>

#ifdef __CUDACC__
#define OSPREY_HOST_DEVICE __host__ __device__
#else
#define OSPREY_HOST_DEVICE
#endif

namespace osprey::random::detail {

/// Counter (block, stream), key (k0, k1); Random123's constants, ten rounds.
OSPREY_HOST_DEVICE inline void philox4x32_10(uint64_t block, uint64_t stream, uint32_t k0, uint32_t k1,
                                             uint32_t out[4]) {
  uint32_t c[4] = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), static_cast<uint32_t>(stream),
                   static_cast<uint32_t>(stream >> 32)};
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    c[0] = hi1 ^ c[1] ^ k0;
    c[1] = lo1;
    c[2] = hi0 ^ c[3] ^ k1;
    c[3] = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  for (int i = 0; i < 4; ++i) out[i] = c[i];
}

}  // namespace osprey::random::detail
