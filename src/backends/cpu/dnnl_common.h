// The CPU kernels' oneDNN engine (one per process) and stream (one per thread).
#pragma once

#include <dnnl.hpp>

#include "ops/attrs.h"

namespace osprey::cpu {

/// The oneDNN post-op for activations it implements exactly as Keras defines them (relu, sigmoid, tanh, elu,
/// exponential); false for the others, which run after the matmul (kernels_nn.cpp).
bool post_op_for(ops::Activation act, dnnl::algorithm& alg, float& alpha);

inline dnnl::engine& dnnl_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream s(dnnl_engine());
  return s;
}

}  // namespace osprey::cpu
