// RNN::run_as_sequence: a recurrent layer's whole sequence as its cell's sequence op (oneDNN's RNN primitives on
// the CPU) wherever that computes what the steps would, as Keras takes cuDNN's kernels: input dropout (one mask
// over every step, as Keras's cuDNN path applies it), go_backwards, and masks that are right-padded (each row's
// unmasked steps first: the texts of a padded batch). Other masks, recurrent dropout and other activations run
// the steps one by one (RNN::run).
//
// A row of length L (its unmasked steps) is run from its first step, or with go_backwards from its step L - 1
// down to its first: the op's outputs y'[0, L) are the row's, what follows them is never read. Keras's outputs,
// in the order of its steps, are then gathers: forwards y'[k] for k < L, and for the masked steps after them the
// last output again (or zeros with zero_output_for_mask); backwards the masked steps come first and output zeros,
// then y'[0, L). The last h is y'[L - 1] (the initial h for L = 0). An LSTM's last carry is the op's own when every
// row is whole; with padded rows and the states used, the op holds the carry through each row's padded steps (an
// input that saturates the forget and input gates there, RNNCell::run_sequence), else it is left undefined.
#include <fmt/format.h>

#include <algorithm>

#include "osprey/errors.h"
#include "runtime/device_manager.h"
#include "osprey/keras/layers/rnn.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace {

// Each row's length under a right-padded (n, t) mask, or empty when some row is not right-padded.
std::vector<int64_t> right_padded_lengths(const Tensor& mask, int64_t n, int64_t t) {
  const std::vector<float> m = (mask.dtype() == DType::float32 ? mask : mask.cast(DType::float32)).to_vector<float>();
  std::vector<int64_t> lengths(static_cast<std::size_t>(n));
  for (int64_t b = 0; b < n; ++b) {
    const float* row = m.data() + b * t;
    int64_t len = 0;
    while (len < t && row[len] != 0.0f) ++len;
    for (int64_t k = len; k < t; ++k) {
      if (row[k] != 0.0f) return {};
    }
    lengths[static_cast<std::size_t>(b)] = len;
  }
  return lengths;
}

// t (made on the current device) where `like` is.
Tensor where_is(Tensor t, const Tensor& like) {
  return &t.device_ref() == &like.device_ref() ? t : t.to(like.device_ref());
}

// Steps of x (n, width, ·) picked per row: entry k of row b is x[b, index[b·count + k]]; (n, count, ·), one gather
// of the flat (n·width, ·) rows.
Tensor gather_steps(const Tensor& x, const std::vector<int64_t>& index, int64_t count) {
  const auto& d = x.shape();
  const int64_t n = d[0], width = d[1], c = d[2];
  std::vector<int64_t> rows(index.size());
  for (std::size_t i = 0; i < index.size(); ++i) rows[i] = static_cast<int64_t>(i) / count * width + index[i];
  const Tensor at = where_is(Tensor::from_vector(rows, Shape({static_cast<int64_t>(rows.size())})), x);
  return ops::reshape(ops::gather_rows(ops::reshape(x, Shape({n * width, c})), at), Shape({n, count, c}));
}

}  // namespace

std::vector<Tensor> RNN::run_as_sequence(const Tensor& x, bool training, const Tensor& mask,
                                         const std::vector<Tensor>& states, bool states_used) {
  if (!cell_->runs_as_sequence(x, states, training)) return {};
  const int64_t n = x.shape()[0], t = x.shape()[1], f = x.shape()[2], u = cell_->units();
  std::vector<int64_t> lengths(static_cast<std::size_t>(n), t);
  if (mask.defined()) {
    // A GPU's mask is read on the host (one wait for the GPU, against a step-by-step loop of small launches; steps
    // with masks are not recorded, so each call reads its own).
    lengths = right_padded_lengths(mask.device_ref().host_memory() ? mask : mask.to("CPU:0"), n, t);
    if (lengths.empty()) return {};  // not right-padded: the steps
  }
  const bool whole = std::all_of(lengths.begin(), lengths.end(), [t](int64_t len) { return len == t; });

  Tensor seq = x;
  if (auto in_masks = training ? cell_->input_dropout_masks(n, f) : std::vector<Tensor>{}; !in_masks.empty()) {
    // One (batch, features) mask over every step (no recurrent dropout here: one mask, not one per gate).
    const Tensor keep = ops::reshape(in_masks[0], Shape({n, 1, f}));
    seq = ops::mul(seq, keep.dtype() == seq.dtype() ? keep : ops::cast(keep, seq.dtype()));
  }
  if (r_.go_backwards) {  // each row from its last unmasked step down to its first
    std::vector<int64_t> index(static_cast<std::size_t>(n * t));
    for (int64_t b = 0; b < n; ++b) {
      const int64_t len = lengths[static_cast<std::size_t>(b)];
      for (int64_t k = 0; k < t; ++k) index[static_cast<std::size_t>(b * t + k)] = k < len ? len - 1 - k : k;
    }
    seq = gather_steps(seq, index, t);
  }
  Tensor held;  // an LSTM's carry is held through each row's padded steps (see RNNCell::run_sequence)
  if (!whole && states_used && states.size() > 1) {
    std::vector<float> p(static_cast<std::size_t>(n * t), 0.0f);
    for (int64_t b = 0; b < n; ++b) {
      for (int64_t k = lengths[static_cast<std::size_t>(b)]; k < t; ++k) p[static_cast<std::size_t>(b * t + k)] = 1.0f;
    }
    held = where_is(Tensor::from_vector(p, Shape({n, t, 1})), x);
  }
  std::vector<Tensor> ran = cell_->run_sequence(seq, states, held);
  const Tensor& y = ran[0];
  std::vector<Tensor> out{Tensor()};
  if (whole) {  // every row to its end: the op's outputs and last states are the layer's
    out[0] = r_.return_sequences ? y : ran[1];
    out.insert(out.end(), ran.begin() + 1, ran.end());
    return out;
  }
  // Outputs in Keras's order as gathers from [zeros, y'] per row: index 0 the zeros, 1 + k the op's output k.
  const Tensor with_zeros = ops::concat({Tensor::zeros(Shape({n, 1, u}), y.dtype()), y}, 1);
  auto source = [&](int64_t b, int64_t p) -> int64_t {
    const int64_t len = lengths[static_cast<std::size_t>(b)];
    if (r_.go_backwards) return p < t - len ? 0 : 1 + p - (t - len);
    if (p < len) return 1 + p;
    return r_.zero_output_for_mask ? 0 : len;  // the last output again (zeros for a row of length 0)
  };
  const int64_t count = r_.return_sequences ? t : 1;
  std::vector<int64_t> index(static_cast<std::size_t>(n * count));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < count; ++p) index[static_cast<std::size_t>(b * count + p)] = source(b, r_.return_sequences ? p : t - 1);
  }
  const Tensor o = gather_steps(with_zeros, index, count);
  out[0] = r_.return_sequences ? o : ops::reshape(o, Shape({n, u}));
  // The last h: y'[L - 1], the initial h for L = 0.
  const Tensor with_h0 = ops::concat({ops::reshape(states[0], Shape({n, 1, u})), y}, 1);
  out.push_back(ops::reshape(gather_steps(with_h0, lengths, 1), Shape({n, u})));
  // An LSTM's carry: held through the padded steps when the states are used, else left out.
  if (states.size() > 1) out.push_back(held.defined() ? ran[2] : Tensor());
  return out;
}

}  // namespace osprey::keras::layers
