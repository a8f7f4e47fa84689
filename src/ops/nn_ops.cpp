// Activations, the fused Dense op, losses, accuracy counts and optimizer updates.
#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "runtime/device_scope_state.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

Activation activation_from_name(const std::string& name) {
  static const std::pair<const char*, Activation> table[] = {
      {"", Activation::linear},           {"linear", Activation::linear},       {"relu", Activation::relu},
      {"sigmoid", Activation::sigmoid},   {"tanh", Activation::tanh},           {"softmax", Activation::softmax},
      {"gelu", Activation::gelu},         {"elu", Activation::elu},             {"selu", Activation::selu},
      {"softplus", Activation::softplus}, {"softsign", Activation::softsign},   {"silu", Activation::silu},
      {"swish", Activation::silu},        {"leaky_relu", Activation::leaky_relu}, {"exponential", Activation::exponential}};
  for (const auto& [n, a] : table) {
    if (name == n) return a;
  }
  throw ValueError("Could not interpret activation function identifier: '" + name +
                   "'. Known activations: linear, relu, sigmoid, tanh, softmax, gelu, elu, selu, softplus, softsign, "
                   "silu (swish), leaky_relu, exponential (names are case-sensitive).");
}

std::string activation_name(Activation a) {
  switch (a) {
    case Activation::linear: return "linear";
    case Activation::relu: return "relu";
    case Activation::sigmoid: return "sigmoid";
    case Activation::tanh: return "tanh";
    case Activation::softmax: return "softmax";
    case Activation::gelu: return "gelu";
    case Activation::elu: return "elu";
    case Activation::selu: return "selu";
    case Activation::softplus: return "softplus";
    case Activation::softsign: return "softsign";
    case Activation::silu: return "silu";
    case Activation::leaky_relu: return "leaky_relu";
    case Activation::exponential: return "exponential";
  }
  return "linear";
}

static const char* activation_op_name(Activation a) {
  switch (a) {
    case Activation::relu: return "Relu";
    case Activation::sigmoid: return "Sigmoid";
    case Activation::tanh: return "Tanh";
    case Activation::softmax: return "Softmax";
    case Activation::gelu: return "Gelu";
    case Activation::elu: return "Elu";
    case Activation::selu: return "Selu";
    case Activation::softplus: return "Softplus";
    case Activation::softsign: return "Softsign";
    case Activation::silu: return "Silu";
    case Activation::leaky_relu: return "LeakyRelu";
    case Activation::exponential: return "Exp";
    case Activation::linear: return "Identity";
  }
  return "Identity";
}

// dz from dy for an activation, given its output y and (when needed) its input z.
Tensor activation_grad(const Tensor& dy, const Tensor& y, const Tensor& z, Activation act) {
  if (act == Activation::linear) return dy;
  Tensor in[3] = {dy, y, z};
  auto& dev = place(OpId::ActivationGrad, "ActivationGrad", in);
  Tensor out = Tensor::empty(dy.shape(), is_half(dy.dtype()) ? dy.dtype() : DType::float32, &dev);
  ActivationAttrs attrs{act};
  run(OpId::ActivationGrad, dev, in, {&out, 1}, &attrs);
  return out;
}

Tensor activation(const Tensor& x, Activation act) {
  if (act == Activation::linear) return x;
  if (act == Activation::softmax && x.shape().rank() < 1) {
    throw InvalidArgumentError("softmax needs a tensor of rank >= 1, got a scalar");
  }
  const char* name = activation_op_name(act);
  Tensor in[1] = {x};
  auto& dev = place(OpId::Activation, name, in);
  Tensor out = Tensor::empty(x.shape(), is_half(x.dtype()) ? x.dtype() : DType::float32, &dev);
  ActivationAttrs attrs{act};
  run(OpId::Activation, dev, in, {&out, 1}, &attrs);
  maybe_record(name, in, {&out, 1}, [&] {
    return BackwardFn([x = in[0], y = out, act](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{activation_grad(g[0], y, grad_needs_preactivation(act) ? x : Tensor(), act)};
    });
  });
  return out;
}

Tensor masked_softmax(const Tensor& x, const Tensor& mask, const MaskedSoftmaxOptions& o) {
  const auto& xs = x.shape();
  if (xs.rank() < 1 || xs.rank() > kMaxMaskRank) {
    throw InvalidArgumentError(fmt::format("masked_softmax needs a tensor of rank 1 to {}, got shape {}", kMaxMaskRank,
                                           xs.to_string()));
  }
  // Half-precision logits: the softmax runs in float32 between casts (so does its gradient), the result in the
  // logits' dtype.
  if (is_half(x.dtype())) return cast(masked_softmax(cast(x, DType::float32), mask, o), x.dtype());
  MaskedSoftmaxAttrs attrs{};
  attrs.rank = xs.rank();
  attrs.has_mask = mask.defined();
  attrs.causal = o.causal;
  attrs.zero_masked = o.zero_masked;
  attrs.masked_value = o.masked_value;
  for (int i = 0; i < xs.rank(); ++i) attrs.dims[i] = xs[i];
  if (mask.defined()) {
    const auto& ms = mask.shape();
    bool ok = ms.rank() == xs.rank() && mask.dtype() == DType::float32;
    for (int i = 0; ok && i < xs.rank(); ++i) ok = ms[i] == 1 || ms[i] == xs[i];
    if (!ok) {
      throw InvalidArgumentError(fmt::format("masked_softmax: a mask of shape {} ({}) does not broadcast to the "
                                             "logits' shape {} (float32, same rank, each dimension 1 or equal)",
                                             ms.to_string(), dtype_name(mask.dtype()), xs.to_string()));
    }
    int64_t stride = 1;
    for (int i = xs.rank() - 1; i >= 0; --i) {
      attrs.mask_strides[i] = ms[i] == 1 ? 0 : stride;
      stride *= ms[i];
    }
  }
  Tensor in[2] = {x, mask};
  const std::span<const Tensor> inputs(in, mask.defined() ? 2 : 1);
  auto& dev = place(OpId::MaskedSoftmax, "Softmax", in);
  Tensor out = Tensor::empty(xs, DType::float32, &dev);
  run(OpId::MaskedSoftmax, dev, inputs, {&out, 1}, &attrs);
  maybe_record("Softmax", std::span<const Tensor>(in, 1), {&out, 1}, [&] {
    return BackwardFn([y = out, m = in[1], attrs](const std::vector<Tensor>& g) {
      Tensor gin[3] = {g[0], y, m};
      auto& d = place(OpId::MaskedSoftmaxGrad, "SoftmaxGrad", gin);
      Tensor dx = Tensor::empty(y.shape(), DType::float32, &d);
      run(OpId::MaskedSoftmaxGrad, d, std::span<const Tensor>(gin, m.defined() ? 3 : 2), {&dx, 1}, &attrs);
      return std::vector<Tensor>{dx};
    });
  });
  return out;
}

Tensor dense(const Tensor& x, const Tensor& kernel, const Tensor& bias, Activation act) {
  const auto& xs = x.shape();
  const auto& ks = kernel.shape();
  if (xs.rank() != 2 || ks.rank() != 2 || xs[1] != ks[0]) {
    throw InvalidArgumentError(fmt::format("dense: input of shape {} does not match kernel of shape {}",
                                           xs.to_string(), ks.to_string()));
  }
  if (bias.defined() && (bias.shape().rank() != 1 || bias.shape()[0] != ks[1])) {
    throw InvalidArgumentError(fmt::format("dense: bias of shape {} does not match kernel of shape {}",
                                           bias.shape().to_string(), ks.to_string()));
  }
  // Half precision (mixed precision's compute dtype): the same fused op on half tensors. The bias and the
  // activation are applied to the product's float32 result and rounded once (TensorFlow rounds after each of its
  // three ops: results differ by at most a rounding); kernels without half support get float32 copies.
  const DType dtype = x.dtype();
  if (is_half(dtype) && (kernel.dtype() != dtype || (bias.defined() && bias.dtype() != dtype))) {
    throw InvalidArgumentError(fmt::format("dense: input {}, kernel {}{}: cast them to one dtype first",
                                           dtype_name(dtype), dtype_name(kernel.dtype()),
                                           bias.defined() ? ", bias " + dtype_name(bias.dtype()) : ""));
  }
  DenseAttrs attrs{act, bias.defined(), grad_needs_preactivation(act)};
  Tensor in[3] = {x, kernel, bias};
  auto& dev = place(OpId::FusedMatMul, "_FusedMatMul", in);
  const DType out = is_half(dtype) ? dtype : DType::float32;
  Tensor outs[2] = {Tensor::empty({xs[0], ks[1]}, out, &dev),
                    attrs.keep_preactivation ? Tensor::empty({xs[0], ks[1]}, out, &dev) : Tensor()};
  run(OpId::FusedMatMul, dev, in, outs, &attrs);
  maybe_record("_FusedMatMul", std::span<const Tensor>(in, bias.defined() ? 3 : 2), {outs, 1}, [&] {
    // The input's gradient only when something upstream needs it (not for the first layer's data batch: that
    // product is as large as the kernel's gradient).
    const bool need_dx = active_recorder()->should_record(std::span<const Tensor>(in, 1));
    return BackwardFn([x = in[0], w = in[1], has_bias = bias.defined(), y = outs[0], z = outs[1], act,
                       need_dx](const std::vector<Tensor>& g) {
      if (has_kernel(OpId::DenseGrad, g[0].device_ref().type())) {
        // One launch for the activation's gradient, the bias's, the kernel's and the input's (a small model's
        // recorded step has four fewer launches per layer); the same kernels in the same order inside.
        Tensor gin[5] = {g[0], y, z, x, w};
        auto& d = place(OpId::DenseGrad, "DenseGrad", gin);
        // A bfloat16 Dense's kernel and bias gradients in float32, unrounded: its variables are float32, and the
        // cast that read them passes a float32 gradient through (GradientTape casts a half source's gradient
        // back). float16 ones stay float16: loss scaling must see them overflow where TensorFlow's do.
        const DType t = g[0].dtype(), params = t == DType::bfloat16 ? DType::float32 : t;
        Tensor gout[4] = {need_dx ? Tensor::empty(x.shape(), t, &d) : Tensor(), Tensor::empty(w.shape(), params, &d),
                          has_bias ? Tensor::empty({w.shape()[1]}, params, &d) : Tensor(),
                          act != Activation::linear ? Tensor::empty(g[0].shape(), t, &d) : Tensor()};
        DenseGradAttrs attrs{act, need_dx, has_bias};
        run(OpId::DenseGrad, d, gin, gout, &attrs);
        std::vector<Tensor> grads{gout[0], gout[1]};
        if (has_bias) grads.push_back(gout[2]);
        return grads;
      }
      Tensor dz = activation_grad(g[0], y, z, act);
      std::vector<Tensor> grads{need_dx ? matmul(dz, w, false, true) : Tensor(), matmul(x, dz, true, false)};
      if (has_bias) {
        Tensor in1[1] = {dz};
        auto& d = place(OpId::BiasAddGrad, "BiasAddGrad", in1);
        Tensor db = Tensor::empty({dz.shape()[1]}, dz.dtype(), &d);
        run(OpId::BiasAddGrad, d, in1, {&db, 1}, nullptr);
        grads.push_back(db);
      }
      return grads;
    });
  });
  return outs[0];
}

static void check_loss_shapes(const Tensor& y_true, const Tensor& y_pred, LossKind kind, const char* name) {
  const auto& ps = y_pred.shape();
  const auto& ts = y_true.shape();
  if (ps.rank() < 1) throw InvalidArgumentError(fmt::format("{}: y_pred must have rank >= 1, got a scalar", name));
  const bool sparse = kind == LossKind::sparse_categorical_crossentropy;
  const bool ok = sparse ? (ts.num_elements() == ps[0] && (ts.rank() == 1 || (ts.rank() == 2 && ts[1] == 1)))
                         : ts.num_elements() == ps.num_elements() && ts[0] == ps[0];
  if (!ok) {
    throw InvalidArgumentError(fmt::format(
        "{}: y_true of shape {} is incompatible with y_pred of shape {}{}", name, ts.to_string(), ps.to_string(),
        sparse ? " (sparse labels need shape (N,) or (N, 1))" : " (shapes must match)"));
  }
}

// The per-sample loss op (Loss, shape (N,)), or with `mean` its batch mean (LossMean, a scalar); the backward
// (LossGrad / LossMeanGrad) takes y_true, y_pred and the upstream gradient to d y_pred.
static Tensor loss_op(bool mean, const Tensor& y_true, const Tensor& y_pred, LossKind kind, double smoothing,
                      const char* name) {
  check_loss_shapes(y_true, y_pred, kind, name);
  const OpId forward = mean ? OpId::LossMean : OpId::Loss, backward = mean ? OpId::LossMeanGrad : OpId::LossGrad;
  LossAttrs attrs{kind, smoothing};
  Tensor in[2] = {y_true, y_pred};
  auto& dev = place(forward, name, in);
  Tensor out = Tensor::empty(mean ? Shape{} : Shape{y_pred.shape()[0]}, DType::float32, &dev);
  run(forward, dev, in, {&out, 1}, &attrs);
  maybe_record(name, std::span<const Tensor>(in + 1, 1), {&out, 1}, [&] {
    return BackwardFn([yt = in[0], yp = in[1], attrs, name, backward](const std::vector<Tensor>& g) {
      Tensor gin[3] = {yt, yp, g[0]};
      auto& d = place(backward, name, gin);
      Tensor dp = Tensor::empty(yp.shape(), DType::float32, &d);
      run(backward, d, gin, {&dp, 1}, &attrs);
      return std::vector<Tensor>{dp};
    });
  });
  return out;
}

static Tensor loss(const Tensor& y_true, const Tensor& y_pred, LossKind kind, double smoothing, const char* name) {
  return loss_op(false, y_true, y_pred, kind, smoothing, name);
}

// The tape records losses against y_pred only (labels get no gradient), so the backward returns one gradient;
// the recorder is given just y_pred as the op's input.
Tensor binary_crossentropy(const Tensor& y_true, const Tensor& y_pred, double label_smoothing) {
  return loss(y_true, y_pred, LossKind::binary_crossentropy, label_smoothing, "BinaryCrossentropy");
}
Tensor categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred, double label_smoothing) {
  return loss(y_true, y_pred, LossKind::categorical_crossentropy, label_smoothing, "CategoricalCrossentropy");
}
Tensor sparse_categorical_crossentropy(const Tensor& y_true, const Tensor& y_pred) {
  return loss(y_true, y_pred, LossKind::sparse_categorical_crossentropy, 0.0, "SparseCategoricalCrossentropy");
}
Tensor mean_squared_error(const Tensor& y_true, const Tensor& y_pred) {
  return loss(y_true, y_pred, LossKind::mean_squared_error, 0.0, "MeanSquaredError");
}
Tensor mean_absolute_error(const Tensor& y_true, const Tensor& y_pred) {
  return loss(y_true, y_pred, LossKind::mean_absolute_error, 0.0, "MeanAbsoluteError");
}

Tensor batch_mean_loss(LossFunction f, const Tensor& y_true, const Tensor& y_pred, double label_smoothing) {
  static constexpr struct {
    LossKind kind;
    const char* name;
  } kLosses[] = {{LossKind::binary_crossentropy, "BinaryCrossentropy"},
                 {LossKind::categorical_crossentropy, "CategoricalCrossentropy"},
                 {LossKind::sparse_categorical_crossentropy, "SparseCategoricalCrossentropy"},
                 {LossKind::mean_squared_error, "MeanSquaredError"},
                 {LossKind::mean_absolute_error, "MeanAbsoluteError"}};
  const auto& [kind, name] = kLosses[static_cast<int>(f)];
  const bool smoothed = kind == LossKind::binary_crossentropy || kind == LossKind::categorical_crossentropy;
  const double ls = smoothed ? label_smoothing : 0.0;
  // Fused where the data is and stays (a device scope naming another device type: the two ops place themselves).
  if (!y_pred.defined() || !y_true.defined()) return reduce_mean(loss(y_true, y_pred, kind, ls, name));
  const auto& spec = runtime::current_device_spec();
  const auto type = y_pred.device_ref().type();
  if ((spec && spec->device_type && *spec->device_type != runtime::device_type_name(type)) ||
      !has_kernel(OpId::LossMean, type)) {
    return reduce_mean(loss(y_true, y_pred, kind, ls, name));
  }
  return loss_op(true, y_true, y_pred, kind, ls, name);
}

Tensor accuracy_count(const Tensor& y_true, const Tensor& y_pred, AccuracyKind kind, double threshold) {
  const bool rows_match =
      y_pred.shape().rank() >= 1 && y_true.shape().rank() >= 1 && y_true.shape()[0] == y_pred.shape()[0];
  // Binary accuracy compares element by element; sparse labels are one per row (the kernels read exactly these).
  const int64_t n = rows_match ? y_pred.shape()[0] : 0;
  const bool elements_match = kind == AccuracyKind::binary              ? y_true.num_elements() == y_pred.num_elements()
                              : kind == AccuracyKind::sparse_categorical ? y_true.num_elements() == n
                                                                         : true;
  if (!rows_match || !elements_match) {
    throw InvalidArgumentError(fmt::format("{} accuracy: y_true of shape {} does not match y_pred of shape {}{}",
                                           kind == AccuracyKind::binary        ? "binary"
                                           : kind == AccuracyKind::categorical ? "categorical"
                                                                               : "sparse categorical",
                                           y_true.shape().to_string(), y_pred.shape().to_string(),
                                           kind == AccuracyKind::binary ? " (one label per prediction)"
                                           : kind == AccuracyKind::sparse_categorical ? " (one integer label per row)"
                                                                                       : ""));
  }
  AccuracyAttrs attrs{kind, threshold};
  Tensor in[2] = {y_true, y_pred};
  auto& dev = place(OpId::AccuracyCount, "AccuracyCount", in);
  Tensor out = Tensor::empty({}, DType::float32, &dev);
  run(OpId::AccuracyCount, dev, in, {&out, 1}, &attrs);
  return out;
}

static void check_same(const Tensor& a, const Tensor& b, const char* what) {
  if (a.shape() != b.shape()) {
    throw InvalidArgumentError(fmt::format("{}: shapes differ: {} vs {}", what, a.shape().to_string(),
                                           b.shape().to_string()));
  }
}

// Optimizer updates run on the variable's device; the gradient follows it there.
void apply_sgd(Tensor& var, const Tensor& grad, Tensor* momentum, double lr, double mu, bool nesterov) {
  check_same(var, grad, "apply_sgd");
  Tensor in[3] = {var, grad, momentum ? *momentum : Tensor()};
  auto& dev = place(OpId::ApplySgd, "ResourceApplyKerasMomentum", in, /*pinned=*/true);
  SgdAttrs attrs{static_cast<float>(lr), static_cast<float>(mu), nesterov};
  run(OpId::ApplySgd, dev, in, {}, &attrs);
}

void apply_adam(Tensor& var, Tensor& m, Tensor& v, const Tensor& grad, Tensor* vhat, double alpha, double b1,
                double b2, double eps) {
  check_same(var, grad, "apply_adam");
  Tensor in[5] = {var, m, v, grad, vhat ? *vhat : Tensor()};
  auto& dev = place(OpId::ApplyAdam, "ResourceApplyAdam", in, /*pinned=*/true);
  AdamAttrs attrs{static_cast<float>(alpha), static_cast<float>(b1), static_cast<float>(b2), static_cast<float>(eps)};
  run(OpId::ApplyAdam, dev, in, {}, &attrs);
}

// The flattened inputs (var, m, v, grad, vhat, grad2 per variable) on the variables' device, or false when refused.
static bool adam_many_inputs(std::span<const AdamUpdate> updates, bool copy_gradients, std::vector<Tensor>& in,
                             runtime::Device*& device) {
  in.clear();
  device = nullptr;
  if (updates.empty()) return true;
  runtime::Device& dev = updates[0].var.device_ref();
  if (!has_kernel(OpId::ApplyAdamMany, dev.type())) return false;
  in.reserve(updates.size() * 6);
  for (const auto& u : updates) {
    check_same(u.var, u.grad, "apply_adam");
    if (u.grad2.defined()) check_same(u.var, u.grad2, "apply_adam");
    for (const Tensor* t : {&u.var, &u.m, &u.v, &u.vhat, &u.grad, &u.grad2}) {
      if (t->defined() && t->dtype() != DType::float32) return false;
    }
    for (const Tensor* t : {&u.var, &u.m, &u.v, &u.vhat}) {
      if (t->defined() && &t->device_ref() != &dev) return false;
    }
    for (const Tensor* g : {&u.grad, &u.grad2}) {
      if (g->defined() && &g->device_ref() != &dev && !copy_gradients) return false;
    }
    auto here = [&](const Tensor& g) { return !g.defined() || &g.device_ref() == &dev ? g : g.to(dev); };
    in.insert(in.end(), {u.var, u.m, u.v, here(u.grad), u.vhat, here(u.grad2)});
  }
  device = &dev;
  return true;
}

bool apply_adam_many(std::span<const AdamUpdate> updates, double alpha, double b1, double b2, double eps) {
  std::vector<Tensor> in;
  runtime::Device* dev = nullptr;
  if (!adam_many_inputs(updates, true, in, dev)) {
    return false;
  }
  if (!dev) return true;  // nothing to update
  AdamAttrs attrs{static_cast<float>(alpha), static_cast<float>(b1), static_cast<float>(b2), static_cast<float>(eps)};
  run(OpId::ApplyAdamMany, *dev, in, {}, &attrs);
  return true;
}

bool AdamManyLaunch::prepare(std::span<const AdamUpdate> updates) {
  if (adam_many_inputs(updates, false, in_, device_) && device_) return true;
  in_.clear();
  device_ = nullptr;
  return false;
}

void AdamManyLaunch::run(double alpha, double b1, double b2, double eps) const {
  if (!device_) throw FailedPreconditionError("AdamManyLaunch::run(): prepare() has not succeeded");
  AdamAttrs attrs{static_cast<float>(alpha), static_cast<float>(b1), static_cast<float>(b2), static_cast<float>(eps)};
  ops::run(OpId::ApplyAdamMany, *device_, in_, {}, &attrs);
}

void apply_rmsprop(Tensor& var, Tensor& v, const Tensor& grad, Tensor* mom, Tensor* mg, double lr, double rho,
                   double momentum, double eps) {
  check_same(var, grad, "apply_rmsprop");
  Tensor in[5] = {var, v, grad, mom ? *mom : Tensor(), mg ? *mg : Tensor()};
  auto& dev = place(OpId::ApplyRmsprop, "ResourceApplyRMSProp", in, /*pinned=*/true);
  RmspropAttrs attrs{static_cast<float>(lr), static_cast<float>(rho), static_cast<float>(momentum),
                     static_cast<float>(eps), mg != nullptr};
  run(OpId::ApplyRmsprop, dev, in, {}, &attrs);
}

}  // namespace osprey::ops
