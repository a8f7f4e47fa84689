// Layer normalization as one op each way: the forward keeps each row's mean and 1/sqrt(var + epsilon) for the
// backward, whose second output (dy ⊙ x̂) is summed over the rows for gamma's gradient by the Reduce op. An LSTM
// step's gates as one op each way (the backward recomputes the gates from z).
#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta, double epsilon) {
  const auto& xs = x.shape();
  if (xs.rank() != 2 || x.dtype() != DType::float32) {
    throw InvalidArgumentError(fmt::format("layer_norm needs a float32 tensor of shape (rows, d), got {} {}",
                                           dtype_name(x.dtype()), xs.to_string()));
  }
  for (const Tensor* p : {&gamma, &beta}) {
    if (p->defined() && (p->shape() != Shape({xs[1]}) || p->dtype() != DType::float32)) {
      throw InvalidArgumentError(fmt::format("layer_norm: gamma and beta must be float32 of shape ({}), got {}", xs[1],
                                             p->shape().to_string()));
    }
  }
  if (!(epsilon > 0.0)) throw InvalidArgumentError(fmt::format("layer_norm: epsilon must be > 0, got {}", epsilon));
  const LayerNormAttrs attrs{static_cast<float>(epsilon), gamma.defined(), beta.defined()};
  Tensor in[3] = {x, gamma, beta};
  auto& dev = place(OpId::LayerNorm, "LayerNorm", in);
  Tensor outs[3] = {Tensor::empty(xs, DType::float32, &dev), Tensor::empty({xs[0]}, DType::float32, &dev),
                    Tensor::empty({xs[0]}, DType::float32, &dev)};
  run(OpId::LayerNorm, dev, in, outs, &attrs);
  maybe_record("LayerNorm", in, {outs, 1}, [&] {
    return BackwardFn([x = in[0], g = in[1], has_beta = beta.defined(), mean = outs[1], rstd = outs[2],
                       attrs](const std::vector<Tensor>& grads) {
      Tensor gin[5] = {grads[0], x, g, mean, rstd};
      auto& d = place(OpId::LayerNormGrad, "LayerNormGrad", gin);
      Tensor gout[2] = {Tensor::empty(x.shape(), DType::float32, &d), Tensor::empty(x.shape(), DType::float32, &d)};
      run(OpId::LayerNormGrad, d, gin, gout, &attrs);
      return std::vector<Tensor>{gout[0], g.defined() ? reduce_sum(gout[1], 0) : Tensor(),
                                 has_beta ? reduce_sum(grads[0], 0) : Tensor()};
    });
  });
  return outs[0];
}

std::vector<Tensor> lstm_cell(const Tensor& z, const Tensor& c_prev) {
  const auto& zs = z.shape();
  const auto& cs = c_prev.shape();
  if (zs.rank() != 2 || cs.rank() != 2 || z.dtype() != DType::float32 || c_prev.dtype() != DType::float32 ||
      zs[0] != cs[0] || zs[1] != 4 * cs[1]) {
    throw InvalidArgumentError(fmt::format("lstm_cell needs float32 gates z (batch, 4·units) and a carry c_prev (batch, "
                                           "units); got z {} {} and c_prev {} {}",
                                           dtype_name(z.dtype()), zs.to_string(), dtype_name(c_prev.dtype()),
                                           cs.to_string()));
  }
  Tensor in[2] = {z, c_prev};
  auto& dev = place(OpId::LstmCell, "LstmCell", in);
  std::vector<Tensor> outs{Tensor::empty(cs, DType::float32, &dev), Tensor::empty(cs, DType::float32, &dev)};
  run(OpId::LstmCell, dev, in, outs, nullptr);
  maybe_record("LstmCell", in, outs, [&] {
    return BackwardFn([z = in[0], cp = in[1], c = outs[1]](const std::vector<Tensor>& grads) {
      Tensor gin[5] = {grads[0], grads[1], z, cp, c};
      auto& d = place(OpId::LstmCellGrad, "LstmCellGrad", gin);
      Tensor gout[2] = {Tensor::empty(z.shape(), DType::float32, &d), Tensor::empty(cp.shape(), DType::float32, &d)};
      run(OpId::LstmCellGrad, d, gin, gout, nullptr);
      return std::vector<Tensor>{gout[0], gout[1]};
    });
  });
  return outs;
}

Tensor gru_cell(const Tensor& x, const Tensor& r, const Tensor& h_prev) {
  const auto& xs = x.shape();
  const auto& hs = h_prev.shape();
  if (xs.rank() != 2 || hs.rank() != 2 || r.shape() != xs || x.dtype() != DType::float32 ||
      r.dtype() != DType::float32 || h_prev.dtype() != DType::float32 || xs[0] != hs[0] || xs[1] != 3 * hs[1]) {
    throw InvalidArgumentError(fmt::format("gru_cell needs float32 x and r (batch, 3·units) and h_prev (batch, units); "
                                           "got x {} {}, r {} {} and h_prev {} {}",
                                           dtype_name(x.dtype()), xs.to_string(), dtype_name(r.dtype()),
                                           r.shape().to_string(), dtype_name(h_prev.dtype()), hs.to_string()));
  }
  Tensor in[3] = {x, r, h_prev};
  auto& dev = place(OpId::GruCell, "GruCell", in);
  Tensor out = Tensor::empty(hs, DType::float32, &dev);
  run(OpId::GruCell, dev, in, {&out, 1}, nullptr);
  maybe_record("GruCell", in, {&out, 1}, [&] {
    return BackwardFn([x = in[0], r = in[1], hp = in[2]](const std::vector<Tensor>& grads) {
      Tensor gin[4] = {grads[0], x, r, hp};
      auto& d = place(OpId::GruCellGrad, "GruCellGrad", gin);
      Tensor gout[3] = {Tensor::empty(x.shape(), DType::float32, &d), Tensor::empty(x.shape(), DType::float32, &d),
                        Tensor::empty(hp.shape(), DType::float32, &d)};
      run(OpId::GruCellGrad, d, gin, gout, nullptr);
      return std::vector<Tensor>{gout[0], gout[1], gout[2]};
    });
  });
  return out;
}

}  // namespace osprey::ops
