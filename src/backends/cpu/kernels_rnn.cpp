// CPU kernels of an LSTM step's gates (ops::lstm_cell) and their gradient: rows split between the intra-op threads,
// each row's gates through the vectorised sigmoid and tanh, in a row buffer.
#include <vector>

#include "backends/cpu/kernels.h"
#include "backends/cpu/vector_math.h"

namespace osprey::cpu {

using ops::KernelContext;
using runtime::DeviceType;

namespace {

// The activated gates of one row: σ(i), σ(f), tanh(c̃), σ(o) into a (4u) buffer.
void row_gates(const float* z, int64_t u, float* g) {
  sigmoid_values(z, g, 2 * u);
  tanh_values(z + 2 * u, g + 2 * u, u);
  sigmoid_values(z + 3 * u, g + 3 * u, u);
}

void lstm_cell_kernel(const KernelContext& ctx) {
  const Tensor& z = ctx.inputs[0];
  const int64_t rows = z.shape()[0], u = z.shape()[1] / 4;
  const float* pz = z.data<float>();
  const float* cp = ctx.inputs[1].data<float>();
  float* h = ctx.outputs[0].data<float>();
  float* c = ctx.outputs[1].data<float>();
  parallel_chunks(rows, [&](int64_t rb, int64_t re) {
    std::vector<float> g(static_cast<std::size_t>(4 * u)), tc(static_cast<std::size_t>(u));
    for (int64_t r = rb; r < re; ++r) {
      row_gates(pz + r * 4 * u, u, g.data());
      const float *i = g.data(), *f = i + u, *cc = f + u, *o = cc + u;
      float* cr = c + r * u;
      for (int64_t k = 0; k < u; ++k) cr[k] = f[k] * cp[r * u + k] + i[k] * cc[k];
      tanh_values(cr, tc.data(), u);
      for (int64_t k = 0; k < u; ++k) h[r * u + k] = o[k] * tc[k];
    }
  }, 8);
}

// With the gates recomputed from z and t = tanh(c): dc_total = dc + dh·o·(1 − t²); dz of i, f, c̃, o:
// dc_total·c̃·i(1 − i), dc_total·c_prev·f(1 − f), dc_total·i·(1 − c̃²), dh·t·o(1 − o); dc_prev = dc_total·f.
void lstm_cell_grad_kernel(const KernelContext& ctx) {
  const float* dh = ctx.inputs[0].data<float>();
  const float* dc = ctx.inputs[1].data<float>();
  const Tensor& z = ctx.inputs[2];
  const int64_t rows = z.shape()[0], u = z.shape()[1] / 4;
  const float* pz = z.data<float>();
  const float* cp = ctx.inputs[3].data<float>();
  const float* c = ctx.inputs[4].data<float>();
  float* dz = ctx.outputs[0].data<float>();
  float* dcp = ctx.outputs[1].data<float>();
  parallel_chunks(rows, [&](int64_t rb, int64_t re) {
    std::vector<float> g(static_cast<std::size_t>(4 * u)), tc(static_cast<std::size_t>(u));
    for (int64_t r = rb; r < re; ++r) {
      row_gates(pz + r * 4 * u, u, g.data());
      tanh_values(c + r * u, tc.data(), u);
      const float *i = g.data(), *f = i + u, *cc = f + u, *o = cc + u;
      float* d = dz + r * 4 * u;
      for (int64_t k = 0; k < u; ++k) {
        const int64_t e = r * u + k;
        const float t = tc[k];
        const float total = dc[e] + dh[e] * o[k] * (1.f - t * t);
        d[k] = total * cc[k] * i[k] * (1.f - i[k]);
        d[u + k] = total * cp[e] * f[k] * (1.f - f[k]);
        d[2 * u + k] = total * i[k] * (1.f - cc[k] * cc[k]);
        d[3 * u + k] = dh[e] * t * o[k] * (1.f - o[k]);
        dcp[e] = total * f[k];
      }
    }
  }, 8);
}

}  // namespace

void register_rnn_kernels() {
  ops::register_kernel(ops::OpId::LstmCell, DeviceType::CPU, lstm_cell_kernel);
  ops::register_kernel(ops::OpId::LstmCellGrad, DeviceType::CPU, lstm_cell_grad_kernel);
}

}  // namespace osprey::cpu
