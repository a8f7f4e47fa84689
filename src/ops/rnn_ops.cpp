// A whole LSTM sequence as one op each way (ops::lstm_sequence): the forward keeps the backend's workspace (oneDNN's
// RNN workspace on the CPU) as a fourth output that only its backward reads.
#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "runtime/device_scope_state.h"
#include "runtime/device_type.h"

namespace osprey::ops {

bool lstm_sequence_runs_here(std::span<const Tensor> inputs) {
  const auto& spec = runtime::current_device_spec();
  if (spec && spec->device_type) {
    return has_kernel(OpId::LstmSequence, runtime::device_type_from_name(*spec->device_type).value_or(
                                              runtime::DeviceType::GPU));
  }
  for (const Tensor& t : inputs) {
    if (t.defined() && !has_kernel(OpId::LstmSequence, t.device_ref().type())) return false;
  }
  return true;
}

std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& kernel,
                                  const Tensor& recurrent_kernel, const Tensor& bias) {
  const auto& xs = x.shape();
  const bool ranks = xs.rank() == 3 && h0.shape().rank() == 2 && kernel.shape().rank() == 2;
  const int64_t n = ranks ? xs[0] : 0, t = ranks ? xs[1] : 0, f = ranks ? xs[2] : 0,
                u = ranks ? h0.shape()[1] : 0;
  bool fits = ranks && t > 0 && n > 0 && u > 0 && h0.shape() == Shape({n, u}) && c0.shape() == Shape({n, u}) &&
              kernel.shape() == Shape({f, 4 * u}) && recurrent_kernel.shape() == Shape({u, 4 * u}) &&
              bias.shape() == Shape({4 * u});
  for (const Tensor* p : {&x, &h0, &c0, &kernel, &recurrent_kernel, &bias}) fits = fits && p->dtype() == DType::float32;
  if (!fits) {
    throw InvalidArgumentError(fmt::format(
        "lstm_sequence needs float32 x (batch, steps > 0, features), h0 and c0 (batch, units), kernel (features, "
        "4·units), recurrent_kernel (units, 4·units) and bias (4·units); got x {} {}, h0 {}, c0 {}, kernel {}, "
        "recurrent_kernel {}, bias {}",
        dtype_name(x.dtype()), xs.to_string(), h0.shape().to_string(), c0.shape().to_string(),
        kernel.shape().to_string(), recurrent_kernel.shape().to_string(), bias.shape().to_string()));
  }
  const LstmSequenceAttrs attrs{n, t, f, u};
  // The kernel takes the sequence time-major (oneDNN's fastest layout); the transposes are ops of their own.
  Tensor in[6] = {transpose(x, {1, 0, 2}), h0, c0, kernel, recurrent_kernel, bias};
  auto& dev = place(OpId::LstmSequence, "LstmSequence", in);
  const int64_t ws = workspace_bytes(OpId::LstmSequence, dev.type(), &attrs);
  if (ws <= 0) {
    throw InternalError(fmt::format("LstmSequence: the {} backend registered its kernel without a workspace size",
                                    runtime::device_type_name(dev.type())));
  }
  std::vector<Tensor> outs{Tensor::empty({t, n, u}, DType::float32, &dev), Tensor::empty({n, u}, DType::float32, &dev),
                           Tensor::empty({n, u}, DType::float32, &dev),
                           Tensor::empty({(ws + 3) / 4}, DType::float32, &dev)};
  run(OpId::LstmSequence, dev, in, outs, &attrs);
  std::vector<Tensor> results(outs.begin(), outs.begin() + 3);
  maybe_record("LstmSequence", in, results, [&] {
    std::vector<Tensor> kept(in, in + 6);
    kept.insert(kept.end(), outs.begin(), outs.end());
    return BackwardFn([kept, attrs](const std::vector<Tensor>& grads) {
      std::vector<Tensor> gin(grads.begin(), grads.begin() + 3);  // the tape gives unused outputs zeros
      gin.insert(gin.end(), kept.begin(), kept.end());
      auto& d = place(OpId::LstmSequenceGrad, "LstmSequenceGrad", gin);
      std::vector<Tensor> gout;
      for (std::size_t i = 0; i < 6; ++i) gout.push_back(Tensor::empty(kept[i].shape(), DType::float32, &d));
      run(OpId::LstmSequenceGrad, d, gin, gout, &attrs);
      return gout;
    });
  });
  results[0] = transpose(results[0], {1, 0, 2});
  return results;
}

}  // namespace osprey::ops
