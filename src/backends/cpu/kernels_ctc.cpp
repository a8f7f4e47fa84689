// CPU kernels of the CTC ops: the loss and its gradient (ops/ctc_core.h, which the CUDA plug-in runs too), the greedy
// decoder, and TensorFlow's beam search decoder (CPU only, as TensorFlow's: a tree of prefixes pruned to the beam
// width at every frame). Every sequence is checked before any is computed, so a bad one raises before the threads
// start; sequences are shared out between the threads whole.
#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "backends/cpu/kernels.h"
#include "ops/ctc_core.h"
#include "osprey/errors.h"

namespace osprey::cpu {

namespace {

namespace core = osprey::ctc_core;
using ops::KernelContext;
using runtime::DeviceType;

template <typename F>
void per_sequence(int64_t batch, int64_t work, F&& f) {
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(1, work));
  parallel_chunks(batch, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) f(b);
  }, grain);
}

void check_lengths(const char* op, const int32_t* lengths, int64_t batch, int64_t frames) {
  for (int64_t b = 0; b < batch; ++b) {
    if (!core::length_fits(lengths[b], frames)) {
      throw ops::ctc_input_error(op, core::kLogitLength, b, -1, lengths[b], 0, frames, 0);
    }
  }
}

void ctc_loss_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::CtcLossAttrs>();
  const core::Sizes s{at.frames, at.classes, at.max_label, at.blank};
  const int32_t* labels = ctx.inputs[0].data<int32_t>();
  const float* logits = ctx.inputs[1].data<float>();
  const int32_t* label_length = ctx.inputs[2].data<int32_t>();
  const int32_t* logit_length = ctx.inputs[3].data<int32_t>();
  for (int64_t b = 0; b < at.batch; ++b) {
    int64_t where = -1, value = 0;
    const int problem = core::check_sequence(labels + b * at.max_label, label_length[b], logit_length[b], s, &where,
                                             &value);
    if (problem) {
      throw ops::ctc_input_error("CTCLoss", problem, b, where, value, at.max_label, at.frames, at.classes);
    }
  }
  float* loss = ctx.outputs[0].data<float>();
  float* grad = at.with_grad ? ctx.outputs[1].data<float>() : nullptr;
  const int64_t states = 2 * at.max_label + 2, T = at.frames, C = at.classes;
  per_sequence(at.batch, T * (states + C) * (at.with_grad ? 3 : 1), [&](int64_t b) {
    const int32_t* lab = labels + b * at.max_label;
    const float* x = logits + b * T * C;
    const int64_t len = logit_length[b];
    std::vector<double> lse(static_cast<std::size_t>(len)), obs(static_cast<std::size_t>(len * states));
    for (int64_t t = 0; t < len; ++t) {
      lse[t] = core::frame_normaliser(x + t * C, C);
      for (int64_t p = 0; p < states; ++p) obs[t * states + p] = core::observed(p, lab, x + t * C, lse[t], s);
    }
    std::vector<double> beta(static_cast<std::size_t>((len + 1) * states));
    for (int64_t p = 0; p < states; ++p) beta[len * states + p] = core::final_weight(p, label_length[b]);
    for (int64_t t = len - 1; t >= 0; --t) {
      for (int64_t p = 0; p < states; ++p) {
        beta[t * states + p] = core::beta_step(p, states, &beta[(t + 1) * states], &obs[t * states], lab);
      }
    }
    loss[b] = static_cast<float>(-beta[0]);
    if (!grad) return;
    float* g = grad + b * T * C;
    std::fill(g + len * C, g + T * C, 0.f);
    std::vector<double> alpha(static_cast<std::size_t>(states)), next(alpha.size()), ab(alpha.size());
    for (int64_t p = 0; p < states; ++p) alpha[p] = core::initial_weight(p);
    for (int64_t t = 0; t < len; ++t) {
      for (int64_t p = 0; p < states; ++p) next[p] = core::alpha_step(p, alpha.data(), &obs[t * states], lab);
      alpha.swap(next);
      double m = -HUGE_VAL;
      for (int64_t p = 0; p < states; ++p) {
        ab[p] = alpha[p] + beta[(t + 1) * states + p];
        m = std::max(m, ab[p]);
      }
      double sum = 0;
      for (int64_t p = 0; p < states; ++p) sum += std::exp(ab[p] - m);
      const double norm = m + std::log(sum);
      for (int64_t c = 0; c < C; ++c) {
        g[t * C + c] = static_cast<float>(core::gradient(c, x + t * C, lse[t], ab.data(), norm, states, lab, s));
      }
    }
  });
}

void ctc_greedy_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::CtcDecodeAttrs>();
  const int32_t* lengths = ctx.inputs[1].data<int32_t>();
  check_lengths("CTCGreedyDecoder", lengths, at.batch, at.frames);
  const float* logits = ctx.inputs[0].data<float>();
  int32_t* decoded = ctx.outputs[0].data<int32_t>();
  float* scores = ctx.outputs[1].data<float>();
  per_sequence(at.batch, at.frames * at.classes, [&](int64_t b) {
    int32_t* out = decoded + b * at.frames;
    const int64_t n = core::greedy_decode(logits + b * at.frames * at.classes, lengths[b], at.classes, at.blank,
                                          at.merge_repeated, out, scores + b);
    std::fill(out + n, out + at.frames, -1);
  });
}

// ---- TensorFlow's beam search (tensorflow/core/util/ctc/ctc_beam_search.h's algorithm, float arithmetic) ----

constexpr float kLogZero = -std::numeric_limits<float>::infinity();

float log_sum_exp(float a, float b) {
  if (a == kLogZero) return b;
  if (b == kLogZero) return a;
  return a > b ? a + std::log1p(std::exp(b - a)) : b + std::log1p(std::exp(a - b));
}

struct Probability {
  float total = kLogZero, blank = kLogZero, label = kLogZero;
  void reset() { *this = Probability{}; }
};

// A prefix: its last label and its parent's index in the tree (-1 for the root).
struct Entry {
  int64_t parent;
  int32_t label;
  Probability oldp, newp;
  std::unordered_map<int32_t, int64_t> children;
  bool active() const { return newp.total != kLogZero; }
};

class BeamSearch {
 public:
  BeamSearch(int64_t classes, int64_t blank, int64_t width) : classes_(classes), blank_(blank), width_(width) {
    entries_.push_back(Entry{-1, -1, {}, {}, {}});
    entries_[0].newp.total = 0.f;
    entries_[0].newp.blank = 0.f;
    leaves_.push_back(0);
  }

  void step(const float* x) {
    // The log-softmax's normaliser as TensorFlow sums it: the blank's column moved last.
    float max_coeff = x[0];
    for (int64_t c = 1; c < classes_; ++c) max_coeff = std::max(max_coeff, x[c]);
    float sum = 0.f;
    for (int64_t c = 0; c < classes_; ++c) {
      if (c != blank_) sum += std::exp(x[c] - max_coeff);
    }
    sum += std::exp(x[blank_] - max_coeff);
    const float norm = max_coeff + std::log(sum);

    const std::vector<int64_t> branches = extract();
    leaves_.clear();
    for (int64_t i : branches) entries_[i].oldp = entries_[i].newp;
    for (int64_t i : branches) {
      Entry& e = entries_[i];
      if (e.parent >= 0) {
        const Entry& parent = entries_[e.parent];
        if (parent.active()) {
          const float previous = e.label == parent.label ? parent.oldp.blank : parent.oldp.total;
          e.newp.label = log_sum_exp(e.newp.label, previous);
        }
        e.newp.label += x[e.label] - norm;
      }
      e.newp.blank = e.oldp.total + x[blank_] - norm;
      e.newp.total = log_sum_exp(e.newp.blank, e.newp.label);
      push(i);
    }
    for (int64_t i : branches) {
      if (!candidate(entries_[i].oldp)) continue;
      for (int64_t c = 0; c < classes_; ++c) {
        if (c == blank_) continue;
        const int64_t ci = child(i, static_cast<int32_t>(c));
        Entry& ch = entries_[ci];
        if (ch.active()) continue;
        const Entry& e = entries_[i];
        ch.newp.blank = kLogZero;
        const float previous = ch.label == e.label ? e.oldp.blank : e.oldp.total;
        ch.newp.label = x[c] - norm + previous;
        ch.newp.total = ch.newp.label;
        if (candidate(ch.newp)) {
          if (static_cast<int64_t>(leaves_.size()) == width_) entries_[leaves_.front()].newp.reset();
          push(ci);
        } else {
          ch.oldp.reset();
          ch.newp.reset();
        }
      }
    }
  }

  /// The best `top` prefixes (labels, log-probability), best first; InvalidArgumentError when fewer are left.
  void top_paths(int64_t top, int64_t sample, std::vector<std::vector<int32_t>>& paths, std::vector<float>& probs) {
    if (top > static_cast<int64_t>(leaves_.size())) {
      throw InvalidArgumentError(fmt::format("CTCBeamSearchDecoder: sequence {} leaves {} prefixes in the beam, fewer "
                                             "than the {} top_paths asked for",
                                             sample, leaves_.size(), top));
    }
    const std::vector<int64_t> best = extract();
    for (int64_t k = 0; k < top; ++k) {
      std::vector<int32_t> labels;
      for (int64_t i = best[k]; entries_[i].parent >= 0; i = entries_[i].parent) labels.push_back(entries_[i].label);
      std::reverse(labels.begin(), labels.end());
      paths.push_back(std::move(labels));
      probs.push_back(entries_[best[k]].newp.total);
    }
  }

 private:
  bool worse(int64_t a, int64_t b) const { return entries_[a].newp.total > entries_[b].newp.total; }
  // The leaves are a heap with the worst at the front (TensorFlow's TopN of beam_width).
  void push(int64_t i) {
    auto cmp = [this](int64_t a, int64_t b) { return worse(a, b); };
    if (static_cast<int64_t>(leaves_.size()) < width_) {
      leaves_.push_back(i);
      std::push_heap(leaves_.begin(), leaves_.end(), cmp);
    } else if (entries_[i].newp.total > entries_[leaves_.front()].newp.total) {
      std::pop_heap(leaves_.begin(), leaves_.end(), cmp);
      leaves_.back() = i;
      std::push_heap(leaves_.begin(), leaves_.end(), cmp);
    }
  }
  bool candidate(const Probability& p) const {
    return p.total > kLogZero &&
           (static_cast<int64_t>(leaves_.size()) < width_ || p.total > entries_[leaves_.front()].newp.total);
  }
  // The leaves sorted best first (their heap is left as it is).
  std::vector<int64_t> extract() const {
    std::vector<int64_t> v = leaves_;
    std::stable_sort(v.begin(), v.end(),
                     [this](int64_t a, int64_t b) { return entries_[a].newp.total > entries_[b].newp.total; });
    return v;
  }
  int64_t child(int64_t parent, int32_t label) {
    auto found = entries_[parent].children.find(label);
    if (found != entries_[parent].children.end()) return found->second;
    const auto index = static_cast<int64_t>(entries_.size());
    entries_.push_back(Entry{parent, label, {}, {}, {}});
    entries_[parent].children.emplace(label, index);
    return index;
  }

  int64_t classes_, blank_, width_;
  std::vector<Entry> entries_;
  std::vector<int64_t> leaves_;
};

void ctc_beam_search_kernel(const KernelContext& ctx) {
  const auto& at = ctx.attr<ops::CtcDecodeAttrs>();
  const int32_t* lengths = ctx.inputs[1].data<int32_t>();
  check_lengths("CTCBeamSearchDecoder", lengths, at.batch, at.frames);
  const float* logits = ctx.inputs[0].data<float>();
  int32_t* decoded = ctx.outputs[0].data<int32_t>();
  float* scores = ctx.outputs[1].data<float>();
  std::fill(decoded, decoded + at.top_paths * at.batch * at.frames, -1);
  // Sequences one after another: a sequence with too few prefixes raises, which a thread of the team cannot.
  for (int64_t b = 0; b < at.batch; ++b) {
    BeamSearch search(at.classes, at.blank, at.beam_width);
    for (int64_t t = 0; t < lengths[b]; ++t) search.step(logits + (b * at.frames + t) * at.classes);
    std::vector<std::vector<int32_t>> paths;
    std::vector<float> probs;
    search.top_paths(at.top_paths, b, paths, probs);
    for (int64_t k = 0; k < at.top_paths; ++k) {
      std::copy(paths[k].begin(), paths[k].end(), decoded + (k * at.batch + b) * at.frames);
      scores[b * at.top_paths + k] = probs[k];
    }
  }
}

}  // namespace

void register_ctc_kernels() {
  ops::register_kernel(ops::OpId::CtcLoss, DeviceType::CPU, ctc_loss_kernel);
  ops::register_kernel(ops::OpId::CtcGreedyDecode, DeviceType::CPU, ctc_greedy_kernel);
  ops::register_kernel(ops::OpId::CtcBeamSearch, DeviceType::CPU, ctc_beam_search_kernel);
}

}  // namespace osprey::cpu
