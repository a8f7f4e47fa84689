// Connectionist temporal classification: the loss (TensorFlow's dense CTC loss, ops/ctc_core.h) with its gradient
// computed by the forward kernel when a tape watches (as TensorFlow's), the greedy decoder and the beam search
// decoder. Shapes and arguments are checked here; the kernels check the values (lengths, labels), so a recorded step
// that replays them still raises.
#include <fmt/format.h>

#include "ops/attrs.h"
#include "ops/gradient_recorder.h"
#include "ops/kernel.h"
#include "osprey/errors.h"
#include "osprey/ops.h"

namespace osprey::ops {

namespace {

bool is_integer(DType t) { return t == DType::int32 || t == DType::int64; }

// (batch, frames, classes) logits as float32 (other floating dtypes cast, recorded).
Tensor logits_of(const Tensor& logits, const char* op) {
  if (logits.shape().rank() != 3 || !is_floating(logits.dtype())) {
    throw InvalidArgumentError(fmt::format("{}: logits must be a floating tensor of shape (batch, frames, classes); "
                                           "got {} {}",
                                           op, dtype_name(logits.dtype()), logits.shape().to_string()));
  }
  if (logits.shape()[2] < 1) {
    throw InvalidArgumentError(fmt::format("{}: logits of shape {} have no classes", op, logits.shape().to_string()));
  }
  return logits.dtype() == DType::float32 ? logits : cast(logits, DType::float32);
}

// A (batch,) vector of lengths as int32.
Tensor lengths_of(const Tensor& t, int64_t batch, const char* op, const char* what) {
  if (!is_integer(t.dtype()) || t.shape().rank() != 1 || t.shape()[0] != batch) {
    throw InvalidArgumentError(fmt::format("{}: {} must be an int32 or int64 vector of the batch's {} lengths; got {} {}",
                                           op, what, batch, dtype_name(t.dtype()), t.shape().to_string()));
  }
  return t.dtype() == DType::int32 ? t : cast(t, DType::int32);
}

int64_t blank_of(int64_t blank, int64_t classes, const char* op) {
  if (blank < -classes || blank >= classes) {
    throw InvalidArgumentError(fmt::format("{}: the blank (mask) index {} is not a class of the {} (valid: [{}, {}))",
                                           op, blank, classes, -classes, classes));
  }
  return blank < 0 ? blank + classes : blank;
}

}  // namespace

Tensor ctc_loss(const Tensor& labels, const Tensor& logits, const Tensor& label_length, const Tensor& logit_length,
                int64_t blank_index) {
  const char* op = "CTCLoss";
  const Tensor x = logits_of(logits, op);
  const int64_t batch = x.shape()[0];
  if (!is_integer(labels.dtype()) || labels.shape().rank() != 2 || labels.shape()[0] != batch) {
    throw InvalidArgumentError(fmt::format("{}: labels must be an int32 or int64 tensor of shape (batch, max_length) "
                                           "with the logits' batch of {}; got {} {}",
                                           op, batch, dtype_name(labels.dtype()), labels.shape().to_string()));
  }
  Tensor in[4] = {labels.dtype() == DType::int32 ? labels : cast(labels, DType::int32), x,
                  lengths_of(label_length, batch, op, "label_length"),
                  lengths_of(logit_length, batch, op, "logit_length")};
  GradientRecorder* recorder = active_recorder();
  const Tensor watched[1] = {x};
  CtcLossAttrs attrs{batch,  x.shape()[1], x.shape()[2], labels.shape()[1], blank_of(blank_index, x.shape()[2], op),
                     recorder != nullptr && recorder->should_record(watched)};
  auto& dev = place(OpId::CtcLoss, op, in);
  std::vector<Tensor> outs;  // reserved, not from an initializer list: GCC 12 -O3 then warns (-Warray-bounds) falsely
  outs.reserve(2);
  outs.push_back(Tensor::empty(Shape({batch}), DType::float32, &dev));
  if (attrs.with_grad) outs.push_back(Tensor::empty(x.shape(), DType::float32, &dev));
  if (batch > 0) run(OpId::CtcLoss, dev, in, outs, &attrs);
  if (attrs.with_grad) {  // the recorder watches x: the loss's gradient is the kernel's, scaled per sequence
    recorder->record(op, watched, {&outs[0], 1}, [grad = outs[1], batch](const std::vector<Tensor>& g) {
      return std::vector<Tensor>{mul(grad, reshape(g[0], Shape({batch, 1, 1})))};
    });
  }
  return outs[0];
}

std::pair<Tensor, Tensor> ctc_greedy_decode(const Tensor& logits, const Tensor& lengths, bool merge_repeated,
                                            int64_t blank_index) {
  const char* op = "CTCGreedyDecoder";
  const Tensor x = logits_of(logits, op);
  const int64_t batch = x.shape()[0], frames = x.shape()[1], classes = x.shape()[2];
  Tensor in[2] = {x, lengths_of(lengths, batch, op, "sequence_lengths")};
  const CtcDecodeAttrs attrs{batch, frames, classes, blank_of(blank_index, classes, op), merge_repeated, 0, 1};
  auto& dev = place(OpId::CtcGreedyDecode, op, in);
  Tensor outs[2] = {Tensor::empty(Shape({batch, frames}), DType::int32, &dev),
                    Tensor::empty(Shape({batch, 1}), DType::float32, &dev)};
  if (batch > 0) run(OpId::CtcGreedyDecode, dev, in, outs, &attrs);
  return {outs[0], outs[1]};
}

std::pair<Tensor, Tensor> ctc_beam_search_decode(const Tensor& logits, const Tensor& lengths, int64_t beam_width,
                                                 int64_t top_paths, int64_t blank_index) {
  const char* op = "CTCBeamSearchDecoder";
  const Tensor x = logits_of(logits, op);
  const int64_t batch = x.shape()[0], frames = x.shape()[1], classes = x.shape()[2];
  if (beam_width < 1 || top_paths < 1 || top_paths > beam_width) {
    throw InvalidArgumentError(fmt::format("{}: beam_width must be >= 1 and top_paths in [1, beam_width]; got "
                                           "beam_width={}, top_paths={}",
                                           op, beam_width, top_paths));
  }
  Tensor in[2] = {x, lengths_of(lengths, batch, op, "sequence_lengths")};
  const CtcDecodeAttrs attrs{batch, frames, classes, blank_of(blank_index, classes, op), false, beam_width, top_paths};
  auto& dev = place(OpId::CtcBeamSearch, op, in);
  Tensor outs[2] = {Tensor::empty(Shape({top_paths, batch, frames}), DType::int32, &dev),
                    Tensor::empty(Shape({batch, top_paths}), DType::float32, &dev)};
  if (batch > 0) run(OpId::CtcBeamSearch, dev, in, outs, &attrs);
  return {outs[0], outs[1]};
}

}  // namespace osprey::ops
