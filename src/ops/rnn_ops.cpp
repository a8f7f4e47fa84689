// A whole LSTM, GRU or simple RNN sequence as one op each way (ops::lstm_sequence, ops::gru_sequence,
// ops::simple_rnn_sequence): the forward keeps the backend's workspace (oneDNN's RNN workspace on the CPU) as a
// last output that only its backward reads.
#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "runtime/device_scope_state.h"
#include "runtime/device_type.h"

namespace osprey::ops {

namespace {
// The sequence op of `cell`, its gradient's op and its attributes' kind.
struct CellOps {
  OpId op, grad;
  int64_t kind;
};
CellOps ops_of(SequenceCell cell) {
  switch (cell) {
    case SequenceCell::lstm: return {OpId::LstmSequence, OpId::LstmSequenceGrad, RnnSequenceAttrs::kLstm};
    case SequenceCell::gru: return {OpId::GruSequence, OpId::GruSequenceGrad, RnnSequenceAttrs::kGru};
    case SequenceCell::gru_reset_before:
      return {OpId::GruSequence, OpId::GruSequenceGrad, RnnSequenceAttrs::kGruResetBefore};
    case SequenceCell::simple_tanh: return {OpId::RnnSequence, OpId::RnnSequenceGrad, RnnSequenceAttrs::kSimpleTanh};
    case SequenceCell::simple_relu: return {OpId::RnnSequence, OpId::RnnSequenceGrad, RnnSequenceAttrs::kSimpleRelu};
    case SequenceCell::simple_sigmoid:
      return {OpId::RnnSequence, OpId::RnnSequenceGrad, RnnSequenceAttrs::kSimpleSigmoid};
  }
  return {OpId::LstmSequence, OpId::LstmSequenceGrad, RnnSequenceAttrs::kLstm};
}

bool computes(runtime::DeviceType type, SequenceCell cell) {
  const CellOps c = ops_of(cell);
  const RnnSequenceAttrs attrs{0, 0, 0, 0, c.kind};
  return kernel_accepts(c.op, type, &attrs) && kernel_accepts(c.grad, type, &attrs);
}
}  // namespace

bool rnn_sequence_runs_here(std::span<const Tensor> inputs, SequenceCell cell) {
  const auto& spec = runtime::current_device_spec();
  if (spec && spec->device_type) {
    const auto type = runtime::device_type_from_name(*spec->device_type);
    return type && computes(*type, cell);
  }
  for (const Tensor& t : inputs) {
    if (t.defined() && !computes(t.device_ref().type(), cell)) return false;
  }
  return true;
}

namespace {

// The sequence op of `kind` on inputs {x (batch-major), states..., kernel, recurrent, bias}: {y (batch-major), the
// last states...}, its backward recorded on the tape. The kernel takes the sequence time-major (oneDNN's fastest
// layout); the transposes are ops of their own. A bfloat16 x (and h0) gives a bfloat16 y and hT, computed in
// bfloat16 where the backend's kernel takes it (attrs.bfloat16), else in float32 between casts; the backward's
// kernel takes float32 gradients and gives float32 ones, cast to x's and h0's dtype.
std::vector<Tensor> run_sequence(OpId op, OpId grad_op, const char* name, RnnSequenceAttrs attrs,
                                 std::vector<Tensor> in) {
  const int64_t n = attrs.batch, t = attrs.steps, u = attrs.units;
  const std::size_t states = in.size() - 4;
  const DType data = in[0].dtype();
  in[0] = transpose(in[0], {1, 0, 2});
  auto& dev = place(op, name, in);
  attrs.bfloat16 = data == DType::bfloat16 && (half_types(op, dev.type()) & kBFloat16) &&
                   (half_types(grad_op, dev.type()) & kBFloat16);
  const int64_t ws = workspace_bytes(op, dev, &attrs);
  if (ws <= 0) {
    throw InternalError(fmt::format("{}: the {} backend registered its kernel without a workspace size", name,
                                    runtime::device_type_name(dev.type())));
  }
  std::vector<Tensor> outs{Tensor::empty({t, n, u}, data, &dev)};
  for (std::size_t i = 0; i < states; ++i) outs.push_back(Tensor::empty({n, u}, i == 0 ? data : DType::float32, &dev));
  outs.push_back(Tensor::empty({(ws + 3) / 4}, DType::float32, &dev));
  run(op, dev, in, outs, &attrs);
  std::vector<Tensor> results(outs.begin(), outs.end() - 1);
  maybe_record(name, in, results, [&] {
    std::vector<Tensor> kept = in;
    kept.insert(kept.end(), outs.begin(), outs.end());
    return BackwardFn([kept, attrs, grad_op, name, inputs = in.size()](const std::vector<Tensor>& grads) {
      std::vector<Tensor> gin;  // the tape gives unused outputs zeros
      for (const Tensor& g : grads) gin.push_back(g.dtype() == DType::float32 ? g : cast(g, DType::float32));
      gin.insert(gin.end(), kept.begin(), kept.end());
      auto& d = place(grad_op, name, gin);
      std::vector<Tensor> gout;
      for (std::size_t i = 0; i < inputs; ++i) gout.push_back(Tensor::empty(kept[i].shape(), DType::float32, &d));
      run(grad_op, d, gin, gout, &attrs);
      for (std::size_t i = 0; i < inputs; ++i) {
        if (kept[i].dtype() != DType::float32) gout[i] = cast(gout[i], kept[i].dtype());
      }
      return gout;
    });
  });
  results[0] = transpose(results[0], {1, 0, 2});
  return results;
}

// InvalidArgumentError unless x (batch, steps > 0, features), states (batch, units), kernel (features,
// gates·units), recurrent (units, gates·units) and bias (bias_size) fit, x and the first state (h0) both float32
// or both bfloat16, the rest float32.
RnnSequenceAttrs check(const char* what, const Tensor& x, std::initializer_list<const Tensor*> states,
                       const Tensor& kernel, const Tensor& recurrent, const Tensor& bias, int64_t gates,
                       int64_t bias_gates, int64_t kind) {
  const auto& xs = x.shape();
  const Tensor& h0 = **states.begin();
  const bool ranks = xs.rank() == 3 && h0.shape().rank() == 2 && kernel.shape().rank() == 2;
  const int64_t n = ranks ? xs[0] : 0, t = ranks ? xs[1] : 0, f = ranks ? xs[2] : 0, u = ranks ? h0.shape()[1] : 0;
  bool fits = ranks && t > 0 && n > 0 && u > 0 && kernel.shape() == Shape({f, gates * u}) &&
              recurrent.shape() == Shape({u, gates * u}) && bias.shape() == Shape({bias_gates * u});
  std::string got = fmt::format("x {} {}", dtype_name(x.dtype()), xs.to_string());
  const DType data = x.dtype();
  fits = fits && (data == DType::float32 || data == DType::bfloat16);
  for (const Tensor* s : states) {
    fits = fits && s->shape() == Shape({n, u}) && s->dtype() == (s == &h0 ? data : DType::float32);
    got += fmt::format(", state {} {}", dtype_name(s->dtype()), s->shape().to_string());
  }
  for (const Tensor* p : {&kernel, &recurrent, &bias}) fits = fits && p->dtype() == DType::float32;
  if (!fits) {
    throw InvalidArgumentError(fmt::format(
        "{} needs x (batch, steps > 0, features) and h0 (batch, units) both float32 or both bfloat16, and float32 "
        "{}kernel (features, {}·units), recurrent_kernel (units, {}·units) and bias ({}·units); got {}, kernel {} {}, "
        "recurrent_kernel {} {}, bias {} {}",
        what, states.size() > 1 ? "c0 (batch, units), " : "", gates, gates, bias_gates, got,
        dtype_name(kernel.dtype()), kernel.shape().to_string(), dtype_name(recurrent.dtype()),
        recurrent.shape().to_string(), dtype_name(bias.dtype()), bias.shape().to_string()));
  }
  return {n, t, f, u, kind};
}

}  // namespace

std::vector<Tensor> lstm_sequence(const Tensor& x, const Tensor& h0, const Tensor& c0, const Tensor& kernel,
                                  const Tensor& recurrent_kernel, const Tensor& bias) {
  const auto attrs =
      check("lstm_sequence", x, {&h0, &c0}, kernel, recurrent_kernel, bias, 4, 4, RnnSequenceAttrs::kLstm);
  return run_sequence(OpId::LstmSequence, OpId::LstmSequenceGrad, "LstmSequence", attrs,
                      {x, h0, c0, kernel, recurrent_kernel, bias});
}

std::vector<Tensor> gru_sequence(const Tensor& x, const Tensor& h0, const Tensor& kernel,
                                 const Tensor& recurrent_kernel, const Tensor& bias, bool reset_after) {
  if (!reset_after) {  // Keras's one (3·units) bias is oneDNN's GRU's
    const auto attrs = check("gru_sequence (reset_after=False)", x, {&h0}, kernel, recurrent_kernel, bias, 3, 3,
                             RnnSequenceAttrs::kGruResetBefore);
    return run_sequence(OpId::GruSequence, OpId::GruSequenceGrad, "GruSequence", attrs,
                        {x, h0, kernel, recurrent_kernel, bias});
  }
  const auto& bs = bias.shape();
  const Tensor flat = bs.rank() == 2 && bs[0] == 2 ? reshape(bias, {2 * bs[1]}) : bias;  // Keras's (2, 3·units)
  const auto attrs = check("gru_sequence", x, {&h0}, kernel, recurrent_kernel, flat, 3, 2 * 3, RnnSequenceAttrs::kGru);
  const int64_t u = attrs.units;
  // Keras's bias rows (input, recurrent) as oneDNN's linear-before-reset GRU takes them: z and r summed, then the
  // input's h, then the recurrent h (added inside the reset gate's product).
  const Tensor rows = reshape(flat, {2, 3 * u});
  const Tensor in_b = reshape(slice_axis(rows, 0, 0, 1), {3 * u}), rec_b = reshape(slice_axis(rows, 0, 1, 1), {3 * u});
  const Tensor b4 = concat({add(slice_axis(in_b, 0, 0, 2 * u), slice_axis(rec_b, 0, 0, 2 * u)),
                            slice_axis(in_b, 0, 2 * u, u), slice_axis(rec_b, 0, 2 * u, u)},
                           0);
  return run_sequence(OpId::GruSequence, OpId::GruSequenceGrad, "GruSequence", attrs,
                      {x, h0, kernel, recurrent_kernel, b4});
}

std::vector<Tensor> simple_rnn_sequence(const Tensor& x, const Tensor& h0, const Tensor& kernel,
                                        const Tensor& recurrent_kernel, const Tensor& bias, Activation activation) {
  int64_t kind = 0;
  switch (activation) {
    case Activation::tanh: kind = RnnSequenceAttrs::kSimpleTanh; break;
    case Activation::relu: kind = RnnSequenceAttrs::kSimpleRelu; break;
    case Activation::sigmoid: kind = RnnSequenceAttrs::kSimpleSigmoid; break;
    default:
      throw InvalidArgumentError(fmt::format("simple_rnn_sequence takes the activations tanh, relu and sigmoid; got {}",
                                             activation_name(activation)));
  }
  const auto attrs = check("simple_rnn_sequence", x, {&h0}, kernel, recurrent_kernel, bias, 1, 1, kind);
  return run_sequence(OpId::RnnSequence, OpId::RnnSequenceGrad, "RnnSequence", attrs,
                      {x, h0, kernel, recurrent_kernel, bias});
}

}  // namespace osprey::ops
