// Reproducible random numbers: a counter-based Philox4x32-10 generator keyed by a global seed.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "osprey/tensor.h"

namespace osprey::random {

/// Seeds the global generator (tf.random.set_seed / keras.utils.set_random_seed). Without a call, the seed is
/// drawn from std::random_device at first use, so runs differ, as in TensorFlow.
void set_seed(uint64_t seed);

/// Uniform values in [minval, maxval) (float32/float64), on the current device.
Tensor uniform(const Shape& shape, double minval = 0.0, double maxval = 1.0, DType dtype = float32);
/// Normal values with the given mean and standard deviation.
Tensor normal(const Shape& shape, double mean = 0.0, double stddev = 1.0, DType dtype = float32);
/// Normal values redrawn until within two standard deviations (tf.random.truncated_normal).
Tensor truncated_normal(const Shape& shape, double mean = 0.0, double stddev = 1.0, DType dtype = float32);
/// Integers in [low, high) (np.random.randint), int64 by default.
Tensor randint(int64_t low, int64_t high, const Shape& shape, DType dtype = int64);
/// A random permutation of 0..n-1 as int64 (np.random.permutation).
Tensor permutation(int64_t n);

/// One stream of the generator: the same (seed, stream) always gives the same numbers.
class Philox {
 public:
  Philox(uint64_t seed, uint64_t stream) : key_{static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)},
                                           stream_(stream) {}
  /// Four fresh 32-bit words.
  void next4(uint32_t out[4]);
  /// A float in [0, 1) with 24 random bits.
  float next_float();
  /// A double in [0, 1) with 53 random bits.
  double next_double();
  uint32_t next_u32();
  /// Continues at block `block` of the stream (each block is 4 words): counter-based random access.
  void skip_to(uint64_t block) {
    counter_ = block;
    used_ = 4;
  }
  /// The next n words, the same as n calls of next_u32() (eight blocks at a time, in vector registers).
  void fill_u32(uint32_t* out, std::size_t n);

 private:
  uint32_t key_[2];
  uint64_t stream_;
  uint64_t counter_ = 0;
  uint32_t buffer_[4] = {};
  int used_ = 4;
};

/// A generator stream for one consumer (an initializer, a shuffle): a new stream of the global seed each call.
Philox next_generator();
/// The (seed, stream) next_generator() would use, taken the same way (for a generator kept in a device tensor).
std::pair<uint64_t, uint64_t> next_seed_and_stream();
/// Uniform float32 values in [0, 1) from a generator kept in `state`, an int64 tensor (seed, stream, block):
/// the values of Philox(seed, stream) from that block on, the block then advanced past them, by a kernel (so a
/// recorded training step draws new values each replay, the same ones an eager step would). Runs on state's
/// device.
Tensor uniform_from_state(const Shape& shape, const Tensor& state);
/// A new generator state for uniform_from_state(), on `device` (the current device when null).
Tensor new_state(runtime::Device* device = nullptr);

/// The global generator's (seed, next stream), seeding it first when it was never seeded, and setting them: how the
/// workers of a MultiWorkerMirroredStrategy start from the chief's (the same initial weights and shuffles).
std::pair<uint64_t, uint64_t> global_state();
void set_global_state(uint64_t seed, uint64_t next_stream);

}  // namespace osprey::random
