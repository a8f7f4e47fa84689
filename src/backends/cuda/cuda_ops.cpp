// The CUDA plug-in's kernels in Osprey's op table: argument unpacking, cuBLASLt matmuls (bias and ReLU fused as
// epilogues, TF32 when enabled, plans cached per shape and alignment), launches of kernels.cu, and device-side
// input errors turned into the same exceptions as on the CPU.
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "backends/cuda/cublaslt_api.h"
#include "backends/cuda/cuda_platform.h"
#include "backends/cuda/kernel_launch.h"
#include "ops/attrs.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "runtime/device_manager.h"

namespace osprey::cuda {

using ops::KernelContext;
using runtime::DeviceType;

namespace {

static_assert(static_cast<int>(ops::UnaryKind::abs) == static_cast<int>(UnaryOp::abs));
static_assert(static_cast<int>(ops::UnaryKind::erf) == static_cast<int>(UnaryOp::erf));
static_assert(static_cast<int>(ops::BinaryKind::pow) == static_cast<int>(BinaryOp::pow));
static_assert(static_cast<int>(ops::BinaryKind::nextafter) == static_cast<int>(BinaryOp::nextafter));
static_assert(static_cast<int>(ops::Broadcast::general) == static_cast<int>(Bcast::general));
static_assert(static_cast<int>(ops::LossKind::mean_absolute_error) == static_cast<int>(LossOp::mae));
static_assert(static_cast<int>(ops::AccuracyKind::sparse_categorical) == static_cast<int>(AccOp::sparse_categorical));

// ---- matmul through cuBLASLt ----

enum class Epilogue { none, bias, relu, relu_bias };

struct MatmulPlan {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulAlgo_t algo{};
};

int alignment_of(const void* p) {
  const auto v = reinterpret_cast<std::uintptr_t>(p);
  return v % 16 == 0 ? 16 : v % 8 == 0 ? 8 : v % 4 == 0 ? 4 : 2;
}

// cuBLASLt's element type of a matmul's operands: float32, or float16/bfloat16 (accumulated in float32, the bias of
// the output's type, as cuBLASLt's default).
cudaDataType_t lt_type(Dt dt) { return dt == Dt::f16 ? CUDA_R_16F : dt == Dt::bf16 ? CUDA_R_16BF : CUDA_R_32F; }

// A cuBLASLt plan (descriptors and the heuristic's best algorithm), or nothing when cuBLASLt has none.
std::optional<MatmulPlan> make_plan(CudaDevice& dev, Dt dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                    Epilogue epi, bool tf32, int align, int64_t batch) {
  MatmulPlan p;
  const cudaDataType_t type = lt_type(dt);
  check(lt_api().desc_create(&p.desc, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  // cuBLAS's first operand is B viewed column-major, the second A.
  cublasOperation_t op_b = tb ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = ta ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(lt_api().desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_b, sizeof(op_b)), "set TRANSA");
  check(lt_api().desc_set(p.desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_a, sizeof(op_a)), "set TRANSB");
  cublasLtEpilogue_t e = epi == Epilogue::bias        ? CUBLASLT_EPILOGUE_BIAS
                         : epi == Epilogue::relu      ? CUBLASLT_EPILOGUE_RELU
                         : epi == Epilogue::relu_bias ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                      : CUBLASLT_EPILOGUE_DEFAULT;
  check(lt_api().desc_set(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, sizeof(e)), "set EPILOGUE");
  // B row-major (k×n) is column-major (n×k), ld n; transposed it is stored (n×k) row-major: (k×n), ld k.
  check(lt_api().layout_create(&p.a, type, tb ? k : n, tb ? n : k, tb ? k : n), "layout B");
  check(lt_api().layout_create(&p.b, type, ta ? m : k, ta ? k : m, ta ? m : k), "layout A");
  check(lt_api().layout_create(&p.c, type, n, m, n), "layout C");
  if (batch > 1) {  // strided batches: one product per batch entry, the matrices one after another
    const int32_t count = static_cast<int32_t>(batch);
    const std::pair<cublasLtMatrixLayout_t, int64_t> layouts[] = {{p.a, k * n}, {p.b, m * k}, {p.c, m * n}};
    for (const auto& [layout, stride] : layouts) {
      check(lt_api().layout_set(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)), "set BATCH_COUNT");
      check(lt_api().layout_set(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof(stride)),
            "set STRIDED_BATCH_OFFSET");
    }
  }
  cublasLtMatmulPreference_t pref = nullptr;
  check(lt_api().pref_create(&pref), "cublasLtMatmulPreferenceCreate");
  std::size_t ws = CudaDevice::kWorkspaceBytes;
  check(lt_api().pref_set(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)),
        "set workspace");
  uint32_t al = static_cast<uint32_t>(align);
  for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                    CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES}) {
    check(lt_api().pref_set(pref, attr, &al, sizeof(al)), "set alignment");
  }
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  const auto st = lt_api().heuristic(dev.lt(), p.desc, p.a, p.b, p.c, p.c, pref, 1, &result, &found);
  lt_api().pref_destroy(pref);
  check(st, "cublasLtMatmulAlgoGetHeuristic");
  if (found == 0) {
    lt_api().layout_destroy(p.a);
    lt_api().layout_destroy(p.b);
    lt_api().layout_destroy(p.c);
    lt_api().desc_destroy(p.desc);
    return std::nullopt;
  }
  p.algo = result.algo;
  return p;
}

// Row-major C[m,n] = op(A)·op(B) (+bias[n], ReLU) as the column-major product C^T = op(B)^T·op(A)^T; with
// `batch`, that many such products of matrices stored one after another (cuBLASLt's strided batches). Every operand
// of type `dt`: float32 (TF32 when enabled), or float16/bfloat16 on the tensor cores with float32 accumulation.
void lt_matmul(CudaDevice& dev, Dt dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void* A,
               const void* B, void* C, const void* bias, Epilogue epi, int64_t batch = 1) {
  if (m == 0 || n == 0 || batch == 0) return;
  if (k == 0) {
    launch_fill_rows(dt, C, bias, m * batch, n, dev.stream());
    if (epi == Epilogue::relu || epi == Epilogue::relu_bias) {
      launch_activation(Act::relu, dt, C, C, m * n * batch, n, dev.stream());
    }
    check(cudaGetLastError(), "fill (k == 0)");
    return;
  }
  // TF32 concerns float32 operands only: half ones use the tensor cores as they are.
  const bool tf32 = dt == Dt::f32 && runtime::DeviceManager::get().tensor_float_32.load(std::memory_order_relaxed);
  const int align = std::min({alignment_of(A), alignment_of(B), alignment_of(C), bias ? alignment_of(bias) : 16});
  using Key = std::tuple<int, int, int64_t, int64_t, int64_t, bool, bool, int, bool, int, int64_t>;
  thread_local std::map<Key, MatmulPlan> plans;
  const Key key{dev.ordinal(), static_cast<int>(dt), m, n, k, ta, tb, static_cast<int>(epi), tf32, align, batch};
  auto it = plans.find(key);
  if (it == plans.end()) {
    // TF32 first when enabled; if cuBLASLt has no TF32 algorithm for this shape and alignment, plain FP32.
    std::optional<MatmulPlan> plan = make_plan(dev, dt, ta, tb, m, n, k, epi, tf32, align, batch);
    if (!plan && tf32) plan = make_plan(dev, dt, ta, tb, m, n, k, epi, false, align, batch);
    if (!plan) {
      throw InternalError(fmt::format("cuBLASLt has no algorithm for a {}x{}x{} {} matmul (alignment {} bytes)", m,
                                      n, k, dt == Dt::f32 ? "float32" : dt == Dt::f16 ? "float16" : "bfloat16",
                                      align));
    }
    it = plans.emplace(key, *plan).first;
  }
  MatmulPlan& p = it->second;
  if (bias) {
    check(lt_api().desc_set(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
          "set BIAS_POINTER");
  }
  const float alpha = 1.f, beta = 0.f;
  check(lt_api().matmul(dev.lt(), p.desc, &alpha, B, p.a, A, p.b, &beta, C, p.c, C, p.c, &p.algo, dev.workspace(),
                       CudaDevice::kWorkspaceBytes, dev.stream()),
        "cublasLtMatmul");
}

// ---- kernels ----

void cast_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  launch_cast(dt_of(ctx.inputs[0].dtype()), dt_of(ctx.attr<ops::CastAttrs>().to), ctx.inputs[0].raw_data(),
              ctx.outputs[0].raw_data(), ctx.inputs[0].num_elements(), l.s());
  l.done("Cast");
}

void matmul_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.inputs[0];
  const auto& at = ctx.attr<ops::MatMulAttrs>();
  const auto& out = ctx.outputs[0].shape();
  const int o = out.rank() - 2;  // 1 for a batched product
  const int64_t m = out[o], n = out[o + 1];
  const int64_t k = at.transpose_a ? a.shape()[o] : a.shape()[o + 1];
  lt_matmul(l.dev, dt_of(a.dtype()), at.transpose_a, at.transpose_b, m, n, k, a.raw_data(), ctx.inputs[1].raw_data(),
            ctx.outputs[0].raw_data(), nullptr, Epilogue::none, o ? out[0] : 1);
  l.done("MatMul");
}

void fused_matmul_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::DenseAttrs>();
  const auto& x = ctx.inputs[0];
  const auto& w = ctx.inputs[1];
  auto& y = ctx.outputs[0];
  const Dt dt = dt_of(x.dtype());  // x, w, the bias and the outputs alike (ops::dense casts them to one type)
  const int64_t m = x.shape()[0], k = x.shape()[1], n = w.shape()[1];
  const void* bias = at.has_bias ? ctx.inputs[2].raw_data() : nullptr;
  if (at.keep_preactivation) {  // z = xW + b for the backward pass, then y = act(z)
    void* z = ctx.outputs[1].raw_data();
    lt_matmul(l.dev, dt, false, false, m, n, k, x.raw_data(), w.raw_data(), z, bias,
              bias ? Epilogue::bias : Epilogue::none);
    launch_activation(act_of(at.activation), dt, z, y.raw_data(), m * n, n, l.s());
  } else if (at.activation == ops::Activation::relu) {
    lt_matmul(l.dev, dt, false, false, m, n, k, x.raw_data(), w.raw_data(), y.raw_data(), bias,
              bias ? Epilogue::relu_bias : Epilogue::relu);
  } else {
    lt_matmul(l.dev, dt, false, false, m, n, k, x.raw_data(), w.raw_data(), y.raw_data(), bias,
              bias ? Epilogue::bias : Epilogue::none);
    if (at.activation != ops::Activation::linear) {
      launch_activation(act_of(at.activation), dt, y.raw_data(), y.raw_data(), m * n, n, l.s());
    }
  }
  l.done("_FusedMatMul");
}

void bias_add_grad_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& dz = ctx.inputs[0];
  sum_columns(ctx, l, dt_of(dz.dtype()), dt_of(ctx.outputs[0].dtype()), dz.raw_data(), ctx.outputs[0].raw_data(),
              dz.shape()[0], dz.shape()[1]);
  l.done("BiasAddGrad");
}

// float32 or half tensors as they are (float64 ones through a float32 copy, into the float32 output).
void activation_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& x = ctx.inputs[0];
  const bool native = x.dtype() == DType::float32 || is_half(x.dtype());
  const Tensor xf = native ? x : x.cast(DType::float32);
  const int64_t cols = x.shape().rank() ? x.shape()[-1] : 1;
  launch_activation(act_of(ctx.attr<ops::ActivationAttrs>().activation), dt_of(xf.dtype()), xf.raw_data(),
                    ctx.outputs[0].raw_data(), x.num_elements(), std::max<int64_t>(cols, 1), l.s());
  l.done("Activation");
}

void activation_grad_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  auto& dz = ctx.outputs[0];
  const int64_t cols = dz.shape().rank() ? dz.shape()[-1] : 1;
  launch_activation_grad(act_of(ctx.attr<ops::ActivationAttrs>().activation), dt_of(dz.dtype()),
                         ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(),
                         ctx.inputs[2].defined() ? ctx.inputs[2].raw_data() : nullptr, dz.raw_data(),
                         dz.num_elements(), std::max<int64_t>(cols, 1), l.s());
  l.done("ActivationGrad");
}

void unary_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& x = ctx.inputs[0];
  launch_unary(static_cast<UnaryOp>(ctx.attr<ops::UnaryAttrs>().kind), x.dtype() == DType::float64 ? Dt::f64 : Dt::f32,
               x.raw_data(), ctx.outputs[0].raw_data(), x.num_elements(), l.s());
  l.done("Unary");
}

void binary_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::BinaryAttrs>();
  auto& y = ctx.outputs[0];
  if (at.broadcast == ops::Broadcast::general) {
    launch_binary_general(static_cast<BinaryOp>(at.kind), dt_of(y.dtype()), strided_of(at.geometry),
                          ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), y.raw_data(), y.num_elements(), l.s());
    l.done("Binary");
    return;
  }
  const int64_t cols = y.shape().rank() ? y.shape()[-1] : 1;
  launch_binary(static_cast<BinaryOp>(at.kind), static_cast<Bcast>(at.broadcast), dt_of(y.dtype()),
                ctx.inputs[0].raw_data(), ctx.inputs[1].raw_data(), y.raw_data(), y.num_elements(),
                std::max<int64_t>(cols, 1), l.s());
  l.done("Binary");
}

void reduce_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& x = ctx.inputs[0];
  const Tensor xf = x.dtype() == DType::float32 ? x : x.cast(DType::float32);
  float* y = ctx.outputs[0].data<float>();
  switch (ctx.attr<ops::ReduceAttrs>().kind) {
    case ops::ReduceKind::sum_all:
      launch_sum_all(xf.data<float>(), y, x.num_elements(), false, l.dev.scratch(), l.s());
      break;
    case ops::ReduceKind::mean_all:
      launch_sum_all(xf.data<float>(), y, x.num_elements(), true, l.dev.scratch(), l.s());
      break;
    case ops::ReduceKind::sum_axis0:
      sum_columns(ctx, l, Dt::f32, Dt::f32, xf.data<float>(), y, x.shape()[0], x.shape()[1]);
      break;
    case ops::ReduceKind::sum_axis1: launch_sum_axis1(xf.data<float>(), y, x.shape()[0], x.shape()[1], l.s()); break;
  }
  l.done("Reduce");
}

void gather_rows_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& x = ctx.inputs[0];
  const auto& idx = ctx.inputs[1];
  const int64_t rows = x.shape()[0];
  const int64_t row_bytes = rows ? x.nbytes() / rows : 0;
  l.dev.clear_error();
  launch_gather_rows(static_cast<const char*>(x.raw_data()), idx.data<int64_t>(),
                     static_cast<char*>(ctx.outputs[0].raw_data()), idx.num_elements(), rows, row_bytes,
                     l.dev.scratch(), l.s());
  l.done("GatherV2");
  l.dev.check_errors([rows](const long long err[4]) {
    if (err[0]) throw ops::index_out_of_range(err[1], err[2], rows);
  });
}

void scatter_add_rows_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& upd = ctx.inputs[0];
  const auto& idx = ctx.inputs[1];
  Tensor& out = ctx.outputs[0];
  const int64_t rows = out.shape()[0], n = idx.num_elements();
  l.dev.clear_error();
  // The row width from the output: with no updates the output must still be zeroed.
  launch_scatter_add_rows(upd.data<float>(), idx.data<int64_t>(), out.data<float>(), n, rows,
                          rows ? out.num_elements() / rows : 0, l.dev.scratch(), l.s());
  l.done("ScatterAdd");
  l.dev.check_errors([rows](const long long err[4]) {
    if (err[0]) throw ops::index_out_of_range(err[1], err[2], rows);
  });
}

// Concatenation and slicing along an axis: one strided 2-D copy per input (rows = the outer blocks).
void concat_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::AxisBlocks>();
  Tensor& y = ctx.outputs[0];
  const auto outer = static_cast<std::size_t>(std::max<int64_t>(a.outer, 1));
  const auto elem = dtype_size(y.dtype());
  const std::size_t out_row = static_cast<std::size_t>(y.num_elements()) / outer * elem;
  std::size_t at = 0;
  for (const Tensor& x : ctx.inputs) {
    const std::size_t row = static_cast<std::size_t>(x.num_elements()) / outer * elem;
    if (row && a.outer) {
      check(cudaMemcpy2DAsync(static_cast<char*>(y.raw_data()) + at, out_row, x.raw_data(), row, row, outer,
                              cudaMemcpyDeviceToDevice, l.s()),
            "ConcatV2");
    }
    at += row;
  }
  l.done("ConcatV2");
}

void slice_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::AxisBlocks>();
  const Tensor& x = ctx.inputs[0];
  Tensor& y = ctx.outputs[0];
  const auto outer = static_cast<std::size_t>(std::max<int64_t>(a.outer, 1));
  const auto elem = dtype_size(x.dtype());
  const std::size_t in_row = static_cast<std::size_t>(x.num_elements()) / outer * elem;
  const std::size_t out_row = static_cast<std::size_t>(y.num_elements()) / outer * elem;
  if (out_row && a.outer) {
    check(cudaMemcpy2DAsync(y.raw_data(), out_row,
                            static_cast<const char*>(x.raw_data()) + static_cast<std::size_t>(a.begin * a.inner) * elem,
                            in_row, out_row, outer, cudaMemcpyDeviceToDevice, l.s()),
          "Slice");
  }
  l.done("Slice");
}

MaskedSoftmaxShape masked_softmax_shape(const ops::MaskedSoftmaxAttrs& a) {
  MaskedSoftmaxShape m{a.rank, {}, {}, a.has_mask, a.causal, a.zero_masked, a.masked_value};
  static_assert(ops::kMaxMaskRank == 8);
  for (int i = 0; i < a.rank; ++i) {
    m.dims[i] = a.dims[i];
    m.mask_strides[i] = a.mask_strides[i];
  }
  return m;
}

void masked_softmax_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::MaskedSoftmaxAttrs>();
  const Tensor& x = ctx.inputs[0];
  const int64_t cols = a.dims[a.rank - 1];
  launch_masked_softmax(masked_softmax_shape(a), x.data<float>(), a.has_mask ? ctx.inputs[1].data<float>() : nullptr,
                        ctx.outputs[0].data<float>(), cols ? x.num_elements() / cols : 0, l.s());
  l.done("Softmax");
}

void masked_softmax_grad_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::MaskedSoftmaxAttrs>();
  const Tensor& dy = ctx.inputs[0];
  const int64_t cols = a.dims[a.rank - 1];
  launch_masked_softmax_grad(masked_softmax_shape(a), dy.data<float>(), ctx.inputs[1].data<float>(),
                             a.has_mask ? ctx.inputs[2].data<float>() : nullptr, ctx.outputs[0].data<float>(),
                             cols ? dy.num_elements() / cols : 0, l.s());
  l.done("SoftmaxGrad");
}

void layer_norm_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::LayerNormAttrs>();
  const Tensor& x = ctx.inputs[0];
  launch_layer_norm(x.data<float>(), a.has_gamma ? ctx.inputs[1].data<float>() : nullptr,
                    a.has_beta ? ctx.inputs[2].data<float>() : nullptr, ctx.outputs[0].data<float>(),
                    ctx.outputs[1].data<float>(), ctx.outputs[2].data<float>(), x.shape()[0], x.shape()[1], a.epsilon,
                    l.s());
  l.done("LayerNorm");
}

void layer_norm_grad_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::LayerNormAttrs>();
  const Tensor& dy = ctx.inputs[0];
  launch_layer_norm_grad(dy.data<float>(), ctx.inputs[1].data<float>(), a.has_gamma ? ctx.inputs[2].data<float>() : nullptr,
                         ctx.inputs[3].data<float>(), ctx.inputs[4].data<float>(), ctx.outputs[0].data<float>(),
                         ctx.outputs[1].data<float>(), dy.shape()[0], dy.shape()[1], l.s());
  l.done("LayerNormGrad");
}

void lstm_cell_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const Tensor& z = ctx.inputs[0];
  launch_lstm_cell(z.data<float>(), ctx.inputs[1].data<float>(), ctx.outputs[0].data<float>(),
                   ctx.outputs[1].data<float>(), z.shape()[0], z.shape()[1] / 4, l.s());
  l.done("LstmCell");
}

void lstm_cell_grad_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const Tensor& z = ctx.inputs[2];
  launch_lstm_cell_grad(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), z.data<float>(),
                        ctx.inputs[3].data<float>(), ctx.inputs[4].data<float>(), ctx.outputs[0].data<float>(),
                        ctx.outputs[1].data<float>(), z.shape()[0], z.shape()[1] / 4, l.s());
  l.done("LstmCellGrad");
}

void gru_cell_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const Tensor& x = ctx.inputs[0];
  launch_gru_cell(x.data<float>(), ctx.inputs[1].data<float>(), ctx.inputs[2].data<float>(),
                  ctx.outputs[0].data<float>(), x.shape()[0], x.shape()[1] / 3, l.s());
  l.done("GruCell");
}

void gru_cell_grad_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const Tensor& x = ctx.inputs[1];
  launch_gru_cell_grad(ctx.inputs[0].data<float>(), x.data<float>(), ctx.inputs[2].data<float>(),
                       ctx.inputs[3].data<float>(), ctx.outputs[0].data<float>(), ctx.outputs[1].data<float>(),
                       ctx.outputs[2].data<float>(), x.shape()[0], x.shape()[1] / 3, l.s());
  l.done("GruCellGrad");
}

void transpose_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& a = ctx.attr<ops::TransposeAttrs>();
  Tensor& y = ctx.outputs[0];
  launch_transpose(ctx.inputs[0].raw_data(), y.raw_data(), a.rank, a.in_dims, a.perm, y.num_elements(),
                   static_cast<int>(dtype_size(y.dtype())), l.s());
  l.done("Transpose");
}

void random_uniform_state_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  Tensor& y = ctx.outputs[0];
  launch_random_uniform_state(static_cast<long long*>(ctx.inputs[0].raw_data()), y.data<float>(), y.num_elements(),
                              l.s());
  l.done("StatefulUniform");
}

void run_loss(const KernelContext& ctx, float* out, const float* upstream, float* dp) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::LossAttrs>();
  const auto& yt = ctx.inputs[0];
  const auto& yp = ctx.inputs[1];
  const int64_t n = yp.shape()[0];
  const int64_t d = n ? yp.num_elements() / n : 0;
  const bool sparse = at.kind == ops::LossKind::sparse_categorical_crossentropy;
  if (sparse) l.dev.clear_error();
  launch_loss(static_cast<LossOp>(at.kind), dt_of(yt.dtype()), yt.raw_data(), yp.data<float>(), n, d,
              static_cast<float>(at.label_smoothing), out, upstream, dp, l.dev.scratch(), l.s());
  l.done("Loss");
  if (sparse) {
    l.dev.check_errors([d](const long long err[4]) {
      if (!err[0]) return;
      const auto bits = static_cast<int32_t>(err[2]);
      float v;
      std::memcpy(&v, &bits, sizeof v);
      throw ops::sparse_label_out_of_range(v, d);
    });
  }
}

void loss_kernel(const KernelContext& ctx) { run_loss(ctx, ctx.outputs[0].data<float>(), nullptr, nullptr); }
void loss_grad_kernel(const KernelContext& ctx) {
  run_loss(ctx, nullptr, ctx.inputs[2].data<float>(), ctx.outputs[0].data<float>());
}

void accuracy_count_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::AccuracyAttrs>();
  const auto& yt = ctx.inputs[0];
  const auto& yp = ctx.inputs[1];
  const int64_t n = yp.shape()[0];
  const int64_t d = n ? yp.num_elements() / n : 0;
  const int64_t td = n ? yt.num_elements() / n : 0;
  launch_accuracy(static_cast<AccOp>(at.kind), dt_of(yt.dtype()), yt.raw_data(), yp.data<float>(), n, d, td,
                  static_cast<float>(at.threshold), ctx.outputs[0].data<float>(), l.dev.scratch(), l.s());
  l.done("AccuracyCount");
}

float* optional_data(const Tensor& t) { return t.defined() ? t.data<float>() : nullptr; }

void sgd_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::SgdAttrs>();
  launch_sgd(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), optional_data(ctx.inputs[2]),
             ctx.inputs[0].num_elements(), at.learning_rate, at.momentum, at.nesterov, l.s());
  l.done("ResourceApplyGradientDescent");
}

void adam_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::AdamAttrs>();
  launch_adam(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), ctx.inputs[2].data<float>(),
              ctx.inputs[3].data<float>(), optional_data(ctx.inputs[4]), ctx.inputs[0].num_elements(), at.alpha,
              at.beta_1, at.beta_2, at.epsilon, l.s());
  l.done("ResourceApplyAdam");
}

// ApplyAdamMany: (var, m, v, grad, [vhat], [grad2]) per variable, kAdamGroup variables per launch.
void adam_many_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::AdamAttrs>();
  AdamGroup group{};
  auto flush = [&] {
    launch_adam_many(group, at.alpha, at.beta_1, at.beta_2, at.epsilon, l.s());
    group.count = 0;
  };
  for (std::size_t i = 0; i + 6 <= ctx.inputs.size(); i += 6) {
    const int k = group.count++;
    group.var[k] = ctx.inputs[i].data<float>();
    group.m[k] = ctx.inputs[i + 1].data<float>();
    group.v[k] = ctx.inputs[i + 2].data<float>();
    group.g[k] = ctx.inputs[i + 3].data<float>();
    group.vhat[k] = optional_data(ctx.inputs[i + 4]);
    group.g2[k] = optional_data(ctx.inputs[i + 5]);
    group.n[k] = ctx.inputs[i].num_elements();
    if (group.count == kAdamGroup) flush();
  }
  if (group.count) flush();
  l.done("ResourceApplyAdam");
}

void rmsprop_kernel(const KernelContext& ctx) {
  Launch l(ctx);
  const auto& at = ctx.attr<ops::RmspropAttrs>();
  launch_rmsprop(ctx.inputs[0].data<float>(), ctx.inputs[1].data<float>(), ctx.inputs[2].data<float>(),
                 optional_data(ctx.inputs[3]), optional_data(ctx.inputs[4]), ctx.inputs[0].num_elements(),
                 at.learning_rate, at.rho, at.momentum, at.epsilon, l.s());
  l.done("ResourceApplyRMSProp");
}

}  // namespace

void register_cuda_kernels() {
  using ops::OpId;
  ops::register_kernel(OpId::Cast, DeviceType::GPU, cast_kernel, ops::kAnyHalf);
  // Half precision (mixed_float16 / mixed_bfloat16): products on the tensor cores through cuBLASLt, activations,
  // their gradients, bias gradients and element-wise arithmetic on the half tensors themselves; every other op
  // through float32 copies (ops/dispatch.cpp).
  ops::register_kernel(OpId::MatMul, DeviceType::GPU, matmul_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::FusedMatMul, DeviceType::GPU, fused_matmul_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::BiasAddGrad, DeviceType::GPU, bias_add_grad_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::Activation, DeviceType::GPU, activation_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::ActivationGrad, DeviceType::GPU, activation_grad_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::Unary, DeviceType::GPU, unary_kernel);
  ops::register_kernel(OpId::Binary, DeviceType::GPU, binary_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::Reduce, DeviceType::GPU, reduce_kernel);
  ops::register_kernel(OpId::GatherRows, DeviceType::GPU, gather_rows_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::ScatterAddRows, DeviceType::GPU, scatter_add_rows_kernel);
  ops::register_kernel(OpId::Concat, DeviceType::GPU, concat_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::Slice, DeviceType::GPU, slice_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::Transpose, DeviceType::GPU, transpose_kernel, ops::kAnyHalf);
  ops::register_kernel(OpId::MaskedSoftmax, DeviceType::GPU, masked_softmax_kernel);
  ops::register_kernel(OpId::LayerNorm, DeviceType::GPU, layer_norm_kernel);
  ops::register_kernel(OpId::LayerNormGrad, DeviceType::GPU, layer_norm_grad_kernel);
  ops::register_kernel(OpId::LstmCell, DeviceType::GPU, lstm_cell_kernel);
  ops::register_kernel(OpId::LstmCellGrad, DeviceType::GPU, lstm_cell_grad_kernel);
  ops::register_kernel(OpId::GruCell, DeviceType::GPU, gru_cell_kernel);
  ops::register_kernel(OpId::GruCellGrad, DeviceType::GPU, gru_cell_grad_kernel);
  ops::register_kernel(OpId::MaskedSoftmaxGrad, DeviceType::GPU, masked_softmax_grad_kernel);
  ops::register_kernel(OpId::RandomUniformState, DeviceType::GPU, random_uniform_state_kernel);
  ops::register_kernel(OpId::Loss, DeviceType::GPU, loss_kernel);
  ops::register_kernel(OpId::LossGrad, DeviceType::GPU, loss_grad_kernel);
  ops::register_kernel(OpId::AccuracyCount, DeviceType::GPU, accuracy_count_kernel);
  ops::register_kernel(OpId::ApplySgd, DeviceType::GPU, sgd_kernel);
  ops::register_kernel(OpId::ApplyAdam, DeviceType::GPU, adam_kernel);
  ops::register_kernel(OpId::ApplyAdamMany, DeviceType::GPU, adam_many_kernel);
  ops::register_kernel(OpId::ApplyRmsprop, DeviceType::GPU, rmsprop_kernel);
  register_cuda_conv_kernels();
  register_cuda_toolkit_kernels();
  register_cuda_linalg_kernels();
  register_cuda_rnn_kernels();
}

}  // namespace osprey::cuda
