// The op table's contract: op ids, the kernel signature, and the single dispatch point every op goes through.
#pragma once

#include <initializer_list>
#include <span>

#include "osprey/tensor.h"
#include "runtime/device_manager.h"

namespace osprey::ops {

enum class OpId : int {
  Cast,
  Fill,
  MatMul,          // attrs MatMulAttrs
  FusedMatMul,     // x, kernel, [bias] -> y, [z]: matmul + bias + activation (attrs DenseAttrs)
  BiasAddGrad,     // dz -> column sums
  Activation,      // attrs ActivationAttrs
  ActivationGrad,  // dy, y, [z] -> dz (attrs ActivationAttrs)
  Unary,           // attrs UnaryAttrs
  Binary,          // attrs BinaryAttrs; b may be a scalar or a row broadcast over a
  Reduce,          // attrs ReduceAttrs
  GatherRows,      // x, indices(int64) -> rows
  Loss,            // y_true, y_pred -> per-sample values (attrs LossAttrs)
  LossGrad,        // y_true, y_pred, upstream per-sample grads -> d y_pred
  AccuracyCount,   // y_true, y_pred -> scalar count of correct samples (attrs AccuracyAttrs)
  ApplySgd,        // var, grad, [momentum] updated in place
  ApplyAdam,       // var, m, v, grad, [vhat]
  ApplyRmsprop,    // var, v, grad, [mom], [mg]
  kCount
};

/// What a kernel sees: inputs already on its device, outputs allocated there, and the op's attributes.
struct KernelContext {
  std::span<const Tensor> inputs;
  std::span<Tensor> outputs;
  const void* attrs;
  runtime::Device* device;

  template <typename A>
  const A& attr() const {
    return *static_cast<const A*>(attrs);
  }
};
using KernelFn = void (*)(const KernelContext&);

/// Puts a kernel into the table (called by platforms' register_kernels()).
void register_kernel(OpId op, runtime::DeviceType type, KernelFn kernel);

/// The dispatch point: picks the device (scope, else the inputs' device, else the default; CPU fallback under
/// soft placement when the device has no kernel), copies inputs there, and logs the placement when enabled.
/// `inputs` are replaced by their on-device copies. Returns the device; run() then executes the kernel.
/// With `pinned` the op runs where inputs[0] lives (ops that update a variable: variables stay where they were
/// created, whatever the scope says).
runtime::Device& place(OpId op, const char* op_name, std::span<Tensor> inputs, bool pinned = false);
/// Runs the op's kernel on `device` (the one place() returned).
void run(OpId op, runtime::Device& device, std::span<const Tensor> inputs, std::span<Tensor> outputs,
         const void* attrs);

}  // namespace osprey::ops
