// The CPU kernels' oneDNN engine (one per process) and stream (one per thread).
#pragma once

#include <dnnl.hpp>

namespace osprey::cpu {

inline dnnl::engine& dnnl_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

inline dnnl::stream& dnnl_stream() {
  thread_local dnnl::stream s(dnnl_engine());
  return s;
}

}  // namespace osprey::cpu
