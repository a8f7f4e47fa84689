#include "osprey/random.h"

#include <immintrin.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <numeric>
#include <random>
#include <vector>

#include <fmt/format.h>

#include "osprey/errors.h"
#include "runtime/device_manager.h"
#include "tensor/philox_block.h"
#include "tensor/tensor_impl.h"

namespace osprey::random {

void Philox::next4(uint32_t out[4]) {
  detail::philox4x32_10(counter_, stream_, key_[0], key_[1], out);
  ++counter_;
}

uint32_t Philox::next_u32() {
  if (used_ == 4) {
    next4(buffer_);
    used_ = 0;
  }
  return buffer_[used_++];
}

namespace {
// The (hi, lo) 32-bit halves of m * c, lane by lane.
__attribute__((target("avx2"), always_inline)) inline void mul_hi_lo(const __m256i& m, const __m256i& c, __m256i& h,
                                                                     __m256i& l) {
  const __m256i even = _mm256_mul_epu32(m, c);                                                 // lanes 0, 2, 4, 6
  const __m256i odd = _mm256_mul_epu32(_mm256_srli_epi64(m, 32), _mm256_srli_epi64(c, 32));  // lanes 1, 3, 5, 7
  h = _mm256_blend_epi32(_mm256_srli_epi64(even, 32), odd, 0xAA);
  l = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
}

// Eight Philox-4x32-10 blocks side by side (counters c .. c+7 of one stream), each word of the block in one AVX2
// register: the 32x32 -> 64-bit products of the even lanes and of the odd lanes (vpmuludq), their halves blended
// back into place. Writes the 32 words block by block, as eight next4() calls would. ~4x faster than next4().
__attribute__((target("avx2"))) void philox8(uint64_t counter, uint64_t stream, const uint32_t key[2],
                                             uint32_t* out) {
  alignas(32) uint32_t lo[8], hi[8];
  for (int l = 0; l < 8; ++l) {
    const uint64_t ctr = counter + static_cast<uint64_t>(l);
    lo[l] = static_cast<uint32_t>(ctr);
    hi[l] = static_cast<uint32_t>(ctr >> 32);
  }
  __m256i c0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(lo));
  __m256i c1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(hi));
  __m256i c2 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream)));
  __m256i c3 = _mm256_set1_epi32(static_cast<int>(static_cast<uint32_t>(stream >> 32)));
  const __m256i m0 = _mm256_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m256i m1 = _mm256_set1_epi32(static_cast<int>(0xCD9E8D57u));
  uint32_t k0 = key[0], k1 = key[1];
  for (int round = 0; round < 10; ++round) {
    __m256i hi0, lo0, hi1, lo1;
    mul_hi_lo(m0, c0, hi0, lo0);
    mul_hi_lo(m1, c2, hi1, lo1);
    const __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32(static_cast<int>(k0)));
    const __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32(static_cast<int>(k1)));
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  // Transpose the four word registers into eight blocks of four words.
  const __m256i a = _mm256_unpacklo_epi32(c0, c1), b = _mm256_unpackhi_epi32(c0, c1);  // 0 1 | 4 5 ...
  const __m256i c = _mm256_unpacklo_epi32(c2, c3), d = _mm256_unpackhi_epi32(c2, c3);
  const __m256i b0 = _mm256_unpacklo_epi64(a, c), b1 = _mm256_unpackhi_epi64(a, c);  // blocks 0, 4 | 1, 5
  const __m256i b2 = _mm256_unpacklo_epi64(b, d), b3 = _mm256_unpackhi_epi64(b, d);  // blocks 2, 6 | 3, 7
  auto* o = reinterpret_cast<__m256i*>(out);
  _mm256_storeu_si256(o + 0, _mm256_permute2x128_si256(b0, b1, 0x20));
  _mm256_storeu_si256(o + 1, _mm256_permute2x128_si256(b2, b3, 0x20));
  _mm256_storeu_si256(o + 2, _mm256_permute2x128_si256(b0, b1, 0x31));
  _mm256_storeu_si256(o + 3, _mm256_permute2x128_si256(b2, b3, 0x31));
}
}  // namespace

void Philox::fill_u32(uint32_t* out, std::size_t n) {
  std::size_t i = 0;
  while (i < n && used_ < 4) out[i++] = buffer_[used_++];
  static const bool avx2 = __builtin_cpu_supports("avx2");
  for (; avx2 && i + 32 <= n; i += 32) {
    philox8(counter_, stream_, key_, out + i);
    counter_ += 8;
  }
  while (i < n) out[i++] = next_u32();
}

float Philox::next_float() { return static_cast<float>(next_u32() >> 8) * (1.0f / 16777216.0f); }

double Philox::next_double() {
  const uint64_t hi = next_u32() >> 5, lo = next_u32() >> 6;
  return (static_cast<double>(hi) * 67108864.0 + static_cast<double>(lo)) * (1.0 / 9007199254740992.0);
}

namespace {
struct GlobalState {
  std::mutex mu;
  bool seeded = false;
  uint64_t seed = 0;
  uint64_t next_stream = 0;
};
GlobalState& state() {
  static GlobalState s;
  return s;
}
}  // namespace

void set_global_state(uint64_t seed, uint64_t next_stream) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  s.seed = seed;
  s.seeded = true;
  s.next_stream = next_stream;
}

void set_seed(uint64_t seed) { set_global_state(seed, 0); }

// The global (seed, next stream), drawing the seed from std::random_device at first use; with `take`, that stream is
// handed out (the next one follows).
static std::pair<uint64_t, uint64_t> seed_and_stream(bool take) {
  auto& s = state();
  std::lock_guard lock(s.mu);
  if (!s.seeded) {
    std::random_device rd;
    s.seed = (uint64_t{rd()} << 32) ^ rd();
    s.seeded = true;
  }
  return {s.seed, take ? s.next_stream++ : s.next_stream};
}

std::pair<uint64_t, uint64_t> next_seed_and_stream() { return seed_and_stream(true); }
std::pair<uint64_t, uint64_t> global_state() { return seed_and_stream(false); }

Philox next_generator() {
  const auto [seed, stream] = next_seed_and_stream();
  return Philox(seed, stream);
}

// Drawn into a host tensor (an allocation too large is the allocator's ResourceExhaustedError, not bad_alloc),
// then moved to the current device when that is not the host.
template <typename F>
static Tensor generate(const Shape& shape, DType dtype, F&& draw) {
  if (dtype != DType::float32 && dtype != DType::float64) {
    throw InvalidArgumentError("random values need a float dtype, got " + dtype_name(dtype));
  }
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  Tensor t = Tensor::empty(shape, dtype, &host);
  const auto n = static_cast<std::size_t>(shape.num_elements());
  if (dtype == DType::float64) {
    double* v = t.data<double>();
    for (std::size_t i = 0; i < n; ++i) v[i] = draw();
  } else {
    float* v = t.data<float>();
    for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(draw());
  }
  runtime::Device& target = runtime::current_device();
  return &target == &host ? t : t.to(target);
}

Tensor uniform(const Shape& shape, double minval, double maxval, DType dtype) {
  if (!(maxval > minval)) {
    throw InvalidArgumentError(fmt::format("uniform: need minval < maxval, got [{}, {})", minval, maxval));
  }
  Philox g = next_generator();
  return generate(shape, dtype, [&] {
    const double u = dtype == DType::float64 ? g.next_double() : g.next_float();
    return minval + (maxval - minval) * u;
  });
}

static double standard_normal(Philox& g) {
  // Box-Muller on (0, 1] so that log() never sees zero.
  const double u1 = 1.0 - g.next_double(), u2 = g.next_double();
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

Tensor normal(const Shape& shape, double mean, double stddev, DType dtype) {
  Philox g = next_generator();
  return generate(shape, dtype, [&] { return mean + stddev * standard_normal(g); });
}

Tensor truncated_normal(const Shape& shape, double mean, double stddev, DType dtype) {
  Philox g = next_generator();
  return generate(shape, dtype, [&] {
    double z;
    do {
      z = standard_normal(g);
    } while (std::abs(z) > 2.0);
    return mean + stddev * z;
  });
}

Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype) {
  if (high <= low) throw InvalidArgumentError(fmt::format("randint: need low < high, got [{}, {})", low, high));
  Philox g = next_generator();
  // high - low in unsigned arithmetic: [INT64_MIN, INT64_MAX) is a valid range whose width overflows int64.
  const uint64_t range = static_cast<uint64_t>(high) - static_cast<uint64_t>(low);
  runtime::Device& host = runtime::DeviceManager::get().host_device();
  Tensor t = Tensor::empty(shape, DType::int64, &host);  // the allocator's error for a size that cannot be had
  int64_t* v = t.data<int64_t>();
  const auto n = static_cast<std::size_t>(shape.num_elements());
  for (std::size_t i = 0; i < n; ++i) {
    const uint64_t r = (uint64_t{g.next_u32()} << 32) | g.next_u32();
    v[i] = static_cast<int64_t>(static_cast<uint64_t>(low) + r % range);
  }
  runtime::Device& target = runtime::current_device();
  if (&target != &host) t = t.to(target);
  return dtype == DType::int64 ? t : t.cast(dtype);
}

Tensor permutation(int64_t n) {
  if (n < 0) throw InvalidArgumentError(fmt::format("permutation: n must be >= 0, got {}", n));
  std::vector<int64_t> v(static_cast<std::size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  Philox g = next_generator();
  // The draws come 256 at a time from the vectorised generator (the same sequence as one next_u32() per draw).
  uint32_t draws[256];
  std::size_t used = 256;
  auto draw = [&] {
    if (used == 256) {
      g.fill_u32(draws, 256);
      used = 0;
    }
    return draws[used++];
  };
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    const uint64_t range = static_cast<uint64_t>(i) + 1;
    uint64_t j;
    if (range <= (uint64_t{1} << 32)) {
      // Lemire's multiply-shift: an unbiased index from one 32-bit draw, without a 64-bit division per element
      // (fit shuffles every epoch: 2048 rows took 21 µs with two draws and a modulo each).
      uint64_t m = uint64_t{draw()} * range;
      if (static_cast<uint32_t>(m) < range) {
        const uint32_t threshold = static_cast<uint32_t>((uint64_t{1} << 32) % range);
        while (static_cast<uint32_t>(m) < threshold) m = uint64_t{draw()} * range;
      }
      j = m >> 32;
    } else {
      const uint64_t hi = draw();
      j = ((hi << 32) | draw()) % range;
    }
    std::swap(v[i], v[j]);
  }
  return Tensor::from_host(v.data(), {n});
}

}  // namespace osprey::random
