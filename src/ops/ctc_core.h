// Connectionist temporal classification on one sequence, in double, shared by the CPU kernels (kernels_ctc.cpp) and
// the CUDA ones (kernels_ctc.cu: a block per sequence, its threads over the independent elements of each phase), so
// that both backends compute every value the same way.
//
// The loss is TensorFlow's dense CTC loss (tf.nn.ctc_loss with dense labels, what keras.ops.ctc_loss calls): its
// alignment states for a label row of max_label entries are a start state, a state per label and a blank state after
// each (the start included), 2·max_label + 2 in all, laid out here as a chain: start 0, blank k at 2k + 1, label k
// (k >= 1) at 2k. A label state emits its label's class, a blank state the blank, the start state nothing. The
// states before the first frame are the start state (log 1) and every other (TensorFlow's "log 0",
// float32(log(1e-307))); the final ones, after frame logit_length, are label state label_length and the blank after
// it (log 1) and the others ("log 0"): so an impossible alignment (a label row longer than its frames allow) has a
// large finite loss, as TensorFlow's. The states past label_length stay in the chain with their padding values, as
// TensorFlow keeps them. The loss is −β_0(start); the gradient for the logits is softmax − the posterior occupancy of
// each class (α·β per frame, normalised per frame), zero past logit_length.
//
// The blank need not be class 0: TensorFlow moves its column first and shifts the labels below it up by one; the
// functions below give the class a label value stands for under that mapping (what a padding value such as -1
// emits matters for impossible alignments only, and is TensorFlow's too).
#pragma once

#include <cmath>
#include <cstdint>

#ifdef __CUDACC__
#define OSPREY_CTC_HD __host__ __device__
#else
#define OSPREY_CTC_HD
#endif

namespace osprey::ctc_core {

/// TensorFlow's log 0 of the initial and final states: float32(log(1e-307)).
constexpr double kLog0 = -706.8936157226562;

/// What check_sequence found wrong (0: nothing).
enum Problem : int { kFine = 0, kLabelLength = 1, kLogitLength = 2, kLabelClass = 3, kLabelIsBlank = 4 };

struct Sizes {
  int64_t frames, classes, max_label, blank;  // blank in [0, classes)
};

OSPREY_CTC_HD inline double log_add(double a, double b) {
  if (a == -HUGE_VAL) return b;
  if (b == -HUGE_VAL) return a;
  return a > b ? a + ::log1p(::exp(b - a)) : b + ::log1p(::exp(a - b));
}

/// TensorFlow's column for label value v once the blank is moved first (v + 1 below the blank, v otherwise; blank 0
/// moves nothing), or -1 where no column has that index.
OSPREY_CTC_HD inline int64_t moved_column(int64_t v, const Sizes& s) {
  const int64_t m = (s.blank != 0 && v < s.blank) ? v + 1 : v;
  return m >= 0 && m < s.classes ? m : -1;
}
/// The original class of moved column m.
OSPREY_CTC_HD inline int64_t original_class(int64_t m, const Sizes& s) {
  if (s.blank == 0) return m;
  return m == 0 ? s.blank : (m <= s.blank ? m - 1 : m);
}
/// The class whose log-probability label value v's state observes, or -1 (TensorFlow's one-hot of an index outside
/// the classes is zero: the state observes log 1).
OSPREY_CTC_HD inline int64_t observed_class(int64_t v, const Sizes& s) {
  const int64_t m = moved_column(v, s);
  return m < 0 ? -1 : original_class(m, s);
}
/// The class whose gradient label value v's state occupies, or -1 (the blank's column and none: TensorFlow counts
/// only columns 1.. for label states).
OSPREY_CTC_HD inline int64_t occupied_class(int64_t v, const Sizes& s) {
  const int64_t m = moved_column(v, s);
  return m < 1 ? -1 : original_class(m, s);
}

/// Whether a sequence length is within the frames (the loss's logit_length, the decoders' sequence_lengths).
OSPREY_CTC_HD inline bool length_fits(int64_t length, int64_t frames) { return length >= 0 && length <= frames; }

/// Checks one sequence's lengths and the labels within its label_length; on a problem sets *where (the label's
/// position, or -1) and *value.
OSPREY_CTC_HD inline int check_sequence(const int32_t* labels, int64_t label_length, int64_t logit_length,
                                        const Sizes& s, int64_t* where, int64_t* value) {
  *where = -1;
  if (label_length < 0 || label_length > s.max_label) {
    *value = label_length;
    return kLabelLength;
  }
  if (!length_fits(logit_length, s.frames)) {
    *value = logit_length;
    return kLogitLength;
  }
  for (int64_t i = 0; i < label_length; ++i) {
    *where = i;
    *value = labels[i];
    if (labels[i] < 0 || labels[i] >= s.classes) return kLabelClass;
    if (labels[i] == s.blank) return kLabelIsBlank;
  }
  *where = -1;
  return kFine;
}

/// The log-sum-exp of one frame's logits (its log-softmax's normaliser).
OSPREY_CTC_HD inline double frame_normaliser(const float* logits, int64_t classes) {
  double m = -HUGE_VAL;
  for (int64_t c = 0; c < classes; ++c) m = logits[c] > m ? logits[c] : m;
  if (m == -HUGE_VAL) return m;
  double sum = 0;
  for (int64_t c = 0; c < classes; ++c) sum += ::exp(static_cast<double>(logits[c]) - m);
  return m + ::log(sum);
}

/// Chain state p's log-probability at a frame (logits of that frame, lse its normaliser).
OSPREY_CTC_HD inline double observed(int64_t p, const int32_t* labels, const float* logits, double lse,
                                     const Sizes& s) {
  if (p == 0) return -HUGE_VAL;
  if (p % 2 == 1) return static_cast<double>(logits[s.blank]) - lse;
  const int64_t c = observed_class(labels[p / 2 - 1], s);
  return c < 0 ? 0.0 : static_cast<double>(logits[c]) - lse;
}

/// Whether the chain allows the skip p - 2 -> p (label k - 1 to label k when the two differ; the start to label 1).
OSPREY_CTC_HD inline bool skip_into(int64_t p, const int32_t* labels) {
  if (p < 2 || p % 2 == 1) return false;
  const int64_t k = p / 2;
  return k == 1 || labels[k - 1] != labels[k - 2];
}

OSPREY_CTC_HD inline double final_weight(int64_t p, int64_t label_length) {
  return p == 2 * label_length || p == 2 * label_length + 1 ? 0.0 : kLog0;
}
OSPREY_CTC_HD inline double initial_weight(int64_t p) { return p == 0 ? 0.0 : kLog0; }

/// β_t(p) from β_{t+1} (next) and frame t's observations of the states (obs, per chain state): the log-probability
/// of the frames from t on given state p before frame t.
OSPREY_CTC_HD inline double beta_step(int64_t p, int64_t states, const double* next, const double* obs,
                                      const int32_t* labels) {
  double v = next[p] + obs[p];
  if (p + 1 < states) v = log_add(v, next[p + 1] + obs[p + 1]);
  if (p + 2 < states && skip_into(p + 2, labels)) v = log_add(v, next[p + 2] + obs[p + 2]);
  return v;
}
/// α_{t+1}(p) from α_t (prev) and frame t's observations: the log-probability of frames ..t ending in state p.
OSPREY_CTC_HD inline double alpha_step(int64_t p, const double* prev, const double* obs, const int32_t* labels) {
  double v = prev[p];
  if (p >= 1) v = log_add(v, prev[p - 1]);
  if (skip_into(p, labels)) v = log_add(v, prev[p - 2]);
  return v + obs[p];
}

/// d loss / d logit of class c at a frame: softmax − occupancy, γ(p) = exp(ab[p] − norm) with ab = α + β of that
/// frame and norm their log-sum-exp.
OSPREY_CTC_HD inline double gradient(int64_t c, const float* logits, double lse, const double* ab, double norm,
                                     int64_t states, const int32_t* labels, const Sizes& s) {
  double occupancy = 0;
  if (c == s.blank) {
    for (int64_t p = 1; p < states; p += 2) occupancy += ::exp(ab[p] - norm);
  }
  for (int64_t p = 2; p < states; p += 2) {
    if (occupied_class(labels[p / 2 - 1], s) == c) occupancy += ::exp(ab[p] - norm);
  }
  return ::exp(static_cast<double>(logits[c]) - lse) - occupancy;
}

/// TensorFlow's greedy decoder on one sequence: the first largest logit of each frame (t < length); a class is
/// emitted unless it is the blank or (merge_repeated) the previous frame's. Returns how many were written to out
/// (at most length); *score = −Σ the frames' largest logits, summed in float in frame order.
OSPREY_CTC_HD inline int64_t greedy_decode(const float* logits, int64_t length, int64_t classes, int64_t blank,
                                           bool merge_repeated, int32_t* out, float* score) {
  int64_t n = 0, prev = -1;
  float total = 0.f;
  for (int64_t t = 0; t < length; ++t) {
    const float* row = logits + t * classes;
    int64_t best = 0;
    for (int64_t c = 1; c < classes; ++c) best = row[c] > row[best] ? c : best;
    total += -row[best];
    if (best != blank && !(merge_repeated && best == prev)) out[n++] = static_cast<int32_t>(best);
    prev = best;
  }
  *score = total;
  return n;
}

}  // namespace osprey::ctc_core
