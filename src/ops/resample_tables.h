// Separable image resampling as TensorFlow computes it: for each output position along one axis, a contiguous run
// of input positions and their weights (a "span"). Every resize method of tf.image.resize other than the plain
// bilinear and nearest taps (resize_taps.h) — ResizeBicubic, ResizeArea, ScaleAndTranslate's kernels with and
// without antialiasing — and keras.ops.image.scale_and_translate are such tables, one per spatial axis; the op
// Resample applies one table along one axis on every backend, and its gradient is the transposed table.
#pragma once

#include <cstdint>
#include <vector>

#include "osprey/ops.h"

namespace osprey::ops::detail {

/// out positions along an axis of `in` positions: output o reads inputs starts[o] .. starts[o] + span - 1 (those
/// below `in`) with weights[o * span + j]; weights past an output's own run are 0.
struct ResampleTable {
  int64_t in = 0, out = 0, span = 1;
  std::vector<int64_t> starts;
  std::vector<float> weights;
};

/// The table of tf.image.resize along one axis of `in` pixels resized to `out`: bicubic (ResizeBicubic with
/// half-pixel centres, Keys' a = -0.5 from its 1024-entry table), area (ResizeArea, its 1/scale folded into the
/// weights), lanczos3/5, gaussian, mitchellcubic (ScaleAndTranslate), bilinear and bicubic with antialias
/// (ScaleAndTranslate's triangle and keyscubic kernels); bilinear and nearest without it as resize_taps.h.
ResampleTable resize_table(ResizeMethod method, bool antialias, int64_t in, int64_t out);

/// TensorFlow's ScaleAndTranslate spans (the op tf.image.resize uses for its kernels).
ResampleTable scale_translate_table(SamplingKernel kernel, bool antialias, int64_t in, int64_t out, float scale,
                                    float translation);

/// keras.ops.image.scale_and_translate's weights (Keras's own dense weight matrix, from JAX): sample (o + 0.5) /
/// scale - translation / scale - 0.5 against every input position, normalized, 0 outside [-0.5, in - 0.5].
ResampleTable keras_scale_translate_table(SamplingKernel kernel, bool antialias, int64_t in, int64_t out, float scale,
                                          float translation);

/// The gradient's table: input i gathers from the outputs that read it, with the same weights.
ResampleTable transpose(const ResampleTable& t);

/// x resampled along `axis` by the table (x.shape()[axis] == table.in): that axis becomes table.out long. float32;
/// on x's device; differentiable (the transposed table).
Tensor resample(const Tensor& x, int axis, const ResampleTable& table);

}  // namespace osprey::ops::detail
