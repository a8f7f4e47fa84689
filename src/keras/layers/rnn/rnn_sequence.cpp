// RNN::run_as_sequence: a recurrent layer's whole sequence as its cell's sequence op (oneDNN's RNN primitives on
// the CPU) wherever that computes what the steps would, as Keras takes cuDNN's kernels: input dropout (one mask
// over every step, as Keras's cuDNN path applies it), go_backwards, and masks whose rows each hold one run of
// unmasked steps: right-padded (the texts of a padded batch), left-padded (keras.utils.pad_sequences's default,
// padding="pre") or both. Masks with holes inside a row, recurrent dropout and other activations run the steps one
// by one (RNN::run).
//
// Keras's steps over a row are its steps in time, or with go_backwards the reversed ones; a row's unmasked run
// starts at step s of them and holds L steps. Keras's masked steps before it output the initial zeros and leave
// the initial states as they are, so the op runs the row from its run's first step: its inputs are the run's L
// steps in Keras's order, what follows them is never read. Keras's outputs are then gathers: zeros for the steps
// before s, y'[p - s] within the run, and for the masked steps after it the last output again (or zeros with
// zero_output_for_mask). The last h is y'[L - 1] (the initial h for L = 0). An LSTM's last carry is the op's own
// when every row is whole; with padded rows and the states used, the op holds the carry through each row's padded
// steps (an input that saturates the forget and input gates there, RNNCell::run_sequence), else it is left
// undefined.
#include <fmt/format.h>

#include <algorithm>

#include "osprey/errors.h"
#include "runtime/device_manager.h"
#include "osprey/keras/layers/rnn.h"
#include "osprey/ops.h"

namespace osprey::keras::layers {

namespace {

// Each row's one run of unmasked steps under an (n, t) mask: its first step and its length (first 0 for an empty
// row); empty when some row's unmasked steps are not one run.
struct Runs {
  std::vector<int64_t> first, length;
};
Runs unmasked_runs(const Tensor& mask, int64_t n, int64_t t) {
  const std::vector<float> m = (mask.dtype() == DType::float32 ? mask : mask.cast(DType::float32)).to_vector<float>();
  Runs runs{std::vector<int64_t>(static_cast<std::size_t>(n)), std::vector<int64_t>(static_cast<std::size_t>(n))};
  for (int64_t b = 0; b < n; ++b) {
    const float* row = m.data() + b * t;
    int64_t first = 0;
    while (first < t && row[first] == 0.0f) ++first;
    int64_t end = first;
    while (end < t && row[end] != 0.0f) ++end;
    for (int64_t k = end; k < t; ++k) {
      if (row[k] != 0.0f) return {};
    }
    runs.first[static_cast<std::size_t>(b)] = first == t ? 0 : first;
    runs.length[static_cast<std::size_t>(b)] = end - first;
  }
  return runs;
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
  return osprey::ops::reshape(osprey::ops::gather_rows(osprey::ops::reshape(x, Shape({n * width, c})), at), Shape({n, count, c}));
}

}  // namespace

std::vector<Tensor> RNN::run_as_sequence(const Tensor& x, bool training, const Tensor& mask,
                                         const std::vector<Tensor>& states, bool states_used) {
  if (!cell_->runs_as_sequence(x, states, training)) return {};
  const int64_t n = x.shape()[0], t = x.shape()[1], f = x.shape()[2], u = cell_->units();
  std::vector<int64_t> lengths(static_cast<std::size_t>(n), t), first(static_cast<std::size_t>(n), 0);
  if (mask.defined()) {
    // A GPU's mask is read on the host (one wait for the GPU, against a step-by-step loop of small launches; steps
    // with masks are not recorded, so each call reads its own).
    Runs runs = unmasked_runs(mask.device_ref().host_memory() ? mask : mask.to("CPU:0"), n, t);
    if (runs.length.empty()) return {};  // a row with a hole: the steps
    lengths = std::move(runs.length);
    first = std::move(runs.first);
  }
  const bool whole = std::all_of(lengths.begin(), lengths.end(), [t](int64_t len) { return len == t; });

  Tensor seq = x;
  if (auto in_masks = training ? cell_->input_dropout_masks(n, f) : std::vector<Tensor>{}; !in_masks.empty()) {
    // One (batch, features) mask over every step (no recurrent dropout here: one mask, not one per gate).
    const Tensor keep = osprey::ops::reshape(in_masks[0], Shape({n, 1, f}));
    seq = osprey::ops::mul(seq, keep.dtype() == seq.dtype() ? keep : osprey::ops::cast(keep, seq.dtype()));
  }
  if (r_.go_backwards || std::any_of(first.begin(), first.end(), [](int64_t s) { return s > 0; })) {
    // Each row's run first, in Keras's order: forwards from its first step, backwards from its last one down.
    std::vector<int64_t> index(static_cast<std::size_t>(n * t));
    for (int64_t b = 0; b < n; ++b) {
      const int64_t s = first[static_cast<std::size_t>(b)], len = lengths[static_cast<std::size_t>(b)];
      for (int64_t k = 0; k < t; ++k) {
        index[static_cast<std::size_t>(b * t + k)] = k >= len ? k : r_.go_backwards ? s + len - 1 - k : s + k;
      }
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
  const Tensor with_zeros = osprey::ops::concat({Tensor::zeros(Shape({n, 1, u}), y.dtype()), y}, 1);
  auto source = [&](int64_t b, int64_t p) -> int64_t {
    const int64_t len = lengths[static_cast<std::size_t>(b)], f0 = first[static_cast<std::size_t>(b)];
    const int64_t s = r_.go_backwards ? t - f0 - len : f0;  // where the run starts among Keras's (reversed) steps
    if (p < s) return 0;  // masked steps before the run: the initial zeros
    if (p < s + len) return 1 + p - s;
    return r_.zero_output_for_mask ? 0 : len;  // the last output again (zeros for a row of length 0)
  };
  const int64_t count = r_.return_sequences ? t : 1;
  std::vector<int64_t> index(static_cast<std::size_t>(n * count));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t p = 0; p < count; ++p) index[static_cast<std::size_t>(b * count + p)] = source(b, r_.return_sequences ? p : t - 1);
  }
  const Tensor o = gather_steps(with_zeros, index, count);
  out[0] = r_.return_sequences ? o : osprey::ops::reshape(o, Shape({n, u}));
  // The last h: y'[L - 1], the initial h for L = 0.
  const Tensor with_h0 = osprey::ops::concat({osprey::ops::reshape(states[0], Shape({n, 1, u})), y}, 1);
  out.push_back(osprey::ops::reshape(gather_steps(with_h0, lengths, 1), Shape({n, u})));
  // An LSTM's carry: held through the padded steps when the states are used, else left out.
  if (states.size() > 1) out.push_back(held.defined() ? ran[2] : Tensor());
  return out;
}

}  // namespace osprey::keras::layers
