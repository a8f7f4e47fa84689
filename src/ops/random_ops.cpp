// Random numbers drawn by a kernel from a generator kept in a device tensor (counter-based Philox), so that a
// recorded step draws fresh values at each replay.
#include <fmt/format.h>

#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/random.h"
#include "runtime/device_manager.h"

namespace osprey::random {

Tensor new_state(runtime::Device* device) {
  const auto [seed, stream] = next_seed_and_stream();
  const std::vector<int64_t> words{static_cast<int64_t>(seed), static_cast<int64_t>(stream), 0};
  Tensor t = Tensor::from_vector(words, Shape{3});  // on the current device
  return device && &t.device_ref() != device ? t.to(*device) : t;
}

Tensor uniform_from_state(const Shape& shape, const Tensor& state) {
  if (!state.defined() || state.dtype() != DType::int64 || state.shape() != Shape{3}) {
    throw InvalidArgumentError(fmt::format("uniform_from_state: the state must be an int64 tensor of shape (3,) "
                                           "(random::new_state()), got {}",
                                           state.defined() ? dtype_name(state.dtype()) + " " + state.shape().to_string()
                                                           : std::string("an undefined tensor")));
  }
  Tensor in[1] = {state};
  auto& dev = ops::place(ops::OpId::RandomUniformState, "StatefulUniform", in, /*pinned=*/true);
  Tensor out = Tensor::empty(shape, DType::float32, &dev);
  ops::run(ops::OpId::RandomUniformState, dev, in, {&out, 1}, nullptr);
  return out;
}

}  // namespace osprey::random
