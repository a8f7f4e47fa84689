// keras.layers.IntegerLookup as Keras 3 computes it on its TensorFlow backend (keras/src/layers/preprocessing/
// index_lookup.py): a static table of term -> index, the mask token to index 0 ("int") or dropped (encodings),
// OOV values to the OOV index (num_oov_indices 1), an error (0) or floormod / FarmHash buckets (more); adapt()
// counts values, drops the mask and OOV tokens and keeps the most frequent (ties: the larger value first, NumPy's
// reversed lexsort); tf_idf weighs counts by log(1 + documents / (1 + document frequency)), the OOV index by
// their mean. Computes on the host (a data layer: integer ids in, ids or encodings out, no gradient).
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <set>
#include <sstream>
#include <string_view>

#include "keras/layers/preprocessing/categorical_common.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/hashing.h"
#include "osprey/keras/layers/lookup.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using json = ser::json;

namespace {

constexpr int64_t kMaxVocabulary = int64_t{1} << 31;  // a vocabulary of more terms is refused (memory, indices)

std::string canonical_mode(std::string mode) {
  if (mode == "binary") mode = "multi_hot";
  if (mode == "tf-idf") mode = "tf_idf";
  if (mode != "int" && mode != "one_hot" && mode != "multi_hot" && mode != "count" && mode != "tf_idf") {
    throw ValueError(fmt::format("Invalid value for argument `output_mode`. Expected one of ('int', 'one_hot', "
                                 "'multi_hot', 'count', 'tf_idf'). Received: output_mode={}",
                                 mode));
  }
  return mode;
}

std::string list_text(const std::vector<int64_t>& v) {
  return fmt::format("[{}]", fmt::join(v, ", "));
}

/// The terms as a set; ValueError naming those that repeat.
std::set<int64_t> unique_terms(const std::vector<int64_t>& tokens) {
  std::set<int64_t> seen;
  std::vector<int64_t> repeated;
  for (int64_t t : tokens) {
    if (!seen.insert(t).second && std::find(repeated.begin(), repeated.end(), t) == repeated.end()) repeated.push_back(t);
  }
  if (!repeated.empty()) {
    throw ValueError(fmt::format("The passed vocabulary has at least one repeated term. Please uniquify your dataset. "
                                 "The repeated terms are: {}",
                                 list_text(repeated)));
  }
  return seen;
}

/// A vocabulary's text, one int64 term per line (a vocabulary.txt asset or a vocabulary file), read a line at a
/// time into a bounded buffer (however long a hostile file's lines, no more than an int64's text is held), at most
/// kMaxVocabulary terms. An empty line is an error, as in TensorFlow's text-file table (a last newline is not);
/// ValueError naming the line.
std::vector<int64_t> read_terms(std::istream& in, const std::string& layer, const std::string& source) {
  std::vector<int64_t> values;
  char buffer[64];
  for (int64_t line = 1;; ++line) {
    in.getline(buffer, sizeof buffer);
    if (in.bad()) throw ValueError(fmt::format("IntegerLookup '{}': reading {} failed", layer, source));
    const bool at_end = in.eof();
    if (in.fail() && !at_end) {  // the buffer filled before the line ended
      throw ValueError(fmt::format("IntegerLookup '{}': line {} of {} starts '{}', longer than any int64 value",
                                   layer, line, source, std::string(buffer, 40)));
    }
    // gcount counts the newline too when one ended the line.
    std::string_view s(buffer, static_cast<std::size_t>(in.gcount()) - (at_end ? 0 : 1));
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    if (s.empty()) {
      if (at_end) break;  // nothing after the last newline
      throw ValueError(fmt::format("IntegerLookup '{}': line {} of {} is empty, not an int64 value", layer, line,
                                   source));
    }
    int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) {
      throw ValueError(fmt::format("IntegerLookup '{}': line {} of {} is '{}', not an int64 value", layer, line,
                                   source, std::string(s)));
    }
    if (static_cast<int64_t>(values.size()) >= kMaxVocabulary) {
      throw ValueError(fmt::format("IntegerLookup '{}': {} holds more than Osprey's 2^31 terms", layer, source));
    }
    values.push_back(v);
    if (at_end) break;
  }
  return values;
}

/// The values of an integer (or float: truncated toward zero, as tf.cast to int64) tensor as int64 on the host.
std::vector<int64_t> int64_values(const Tensor& x, const std::string& layer) {
  if (x.dtype() == DType::int64 || x.dtype() == DType::int32 || x.dtype() == DType::bool_) {
    return x.cast(DType::int64).to_vector<int64_t>();
  }
  std::vector<int64_t> out;
  for (double v : categorical::host_values(x)) {
    if (!std::isfinite(v) || std::abs(v) >= 9.2e18) {
      throw InvalidArgumentError(fmt::format("IntegerLookup '{}': the input holds {}, which is not an int64 value; "
                                             "give integer ids",
                                             layer, v));
    }
    out.push_back(static_cast<int64_t>(std::trunc(v)));
  }
  return out;
}

}  // namespace

IntegerLookup::IntegerLookup(IntegerLookupOptions options)
    : Layer(options.name, "integer_lookup", options.dtype), o_(std::move(options)) {
  if (o_.max_tokens && *o_.max_tokens <= 1) {
    throw ValueError(fmt::format("If `max_tokens` is set for `IntegerLookup`, it must be greater than 1. Received: "
                                 "max_tokens={}",
                                 *o_.max_tokens));
  }
  if (o_.max_tokens && *o_.max_tokens > kMaxVocabulary) {
    throw ValueError(fmt::format("IntegerLookup: max_tokens is at most 2^31 in Osprey; received {}", *o_.max_tokens));
  }
  if (o_.num_oov_indices < 0 || o_.num_oov_indices > kMaxVocabulary) {
    throw ValueError(fmt::format("The value of `num_oov_indices` argument for `IntegerLookup` must >= 0 (Osprey: and "
                                 "at most 2^31). Received: num_oov_indices={}",
                                 o_.num_oov_indices));
  }
  if (o_.vocabulary_dtype != "int64") {
    throw ValueError(fmt::format("Only `vocabulary_dtype='int64'` is supported at this time. Received: "
                                 "vocabulary_dtype={}",
                                 o_.vocabulary_dtype));
  }
  if (o_.pad_to_max_tokens && !o_.max_tokens) {
    throw ValueError("If pad_to_max_tokens is True, must set `max_tokens`. Received: max_tokens=None");
  }
  if (o_.oov_method != "floormod" && o_.oov_method != "farmhash") {
    throw ValueError(fmt::format("IntegerLookup: unknown oov_method '{}'; it takes 'floormod' or 'farmhash'",
                                 o_.oov_method));
  }
  if (o_.salt && o_.oov_method != "farmhash") {
    throw ValueError(fmt::format("`salt` can only be used when `oov_method='farmhash'`. Received: oov_method={}",
                                 o_.oov_method));
  }
  o_.output_mode = canonical_mode(o_.output_mode);
  if (o_.invert && o_.output_mode != "int") {
    throw ValueError(fmt::format("`output_mode` must be `'int'` when `invert` is true. Received: output_mode={}",
                                 o_.output_mode));
  }
  if (o_.sparse && o_.output_mode == "int") {
    throw ValueError(fmt::format("`sparse` may only be true if `output_mode` is `'one_hot'`, `'multi_hot'`, `'count'` "
                                 "or `'tf_idf'`. Received: sparse=True and output_mode={}",
                                 o_.output_mode));
  }
  categorical::no_sparse(o_.sparse, "IntegerLookup");
  if (o_.idf_weights && o_.output_mode != "tf_idf") {
    throw ValueError(fmt::format("`idf_weights` should only be set if `output_mode` is `'tf_idf'`. Received: "
                                 "output_mode={}",
                                 o_.output_mode));
  }
  if (o_.vocabulary && o_.vocabulary_file) {
    throw ValueError(fmt::format("IntegerLookup: give the vocabulary as a list or as a file ('{}'), not both",
                                 *o_.vocabulary_file));
  }
  has_input_vocabulary_ = o_.vocabulary || o_.vocabulary_file;
  if (o_.output_mode == "tf_idf" && has_input_vocabulary_ && !o_.idf_weights) {
    throw ValueError("When specifying the `vocabulary` argument, in TF-IDF output mode, the `idf_weights` argument "
                     "must also be provided.");
  }
  if (o_.vocabulary) set_vocabulary(*o_.vocabulary, o_.idf_weights);
  if (o_.vocabulary_file) set_vocabulary_file(*o_.vocabulary_file);
}

// ---- the vocabulary ----

int64_t IntegerLookup::vocabulary_size() const { return static_cast<int64_t>(terms_.size()) + token_start(); }

int64_t IntegerLookup::depth() const {
  if (o_.pad_to_max_tokens) return *o_.max_tokens;
  if (!frozen_size_) {
    throw RuntimeError(fmt::format("When using `output_mode={}` and `pad_to_max_tokens=False`, you must set the "
                                   "layer's vocabulary before calling it. Either pass a `vocabulary` argument to the "
                                   "layer, or call `adapt` with some sample data.",
                                   o_.output_mode));
  }
  return *frozen_size_;
}

void IntegerLookup::freeze_size(int64_t size) {
  if (o_.output_mode != "int" && !o_.pad_to_max_tokens && frozen_size_ && *frozen_size_ != size) {
    throw RuntimeError(fmt::format("When using `output_mode={}` and `pad_to_max_tokens=False`, the vocabulary size "
                                   "cannot be changed after the layer is called. Old vocab size is {}, new vocab "
                                   "size is {}",
                                   o_.output_mode, *frozen_size_, size));
  }
  frozen_size_ = size;
}

void IntegerLookup::set_saved_vocabulary_size(int64_t size) { freeze_size(size); }

void IntegerLookup::set_terms(std::vector<int64_t> terms) {
  freeze_size(token_start() + static_cast<int64_t>(terms.size()));
  index_of_.clear();
  for (std::size_t i = 0; i < terms.size(); ++i) index_of_.emplace(terms[i], token_start() + static_cast<int64_t>(i));
  terms_ = std::move(terms);
}

std::vector<int64_t> IntegerLookup::get_vocabulary(bool include_special_tokens) const {
  std::vector<int64_t> v(static_cast<std::size_t>(token_start()), o_.oov_token);
  if (o_.mask_token && o_.output_mode == "int") v[0] = *o_.mask_token;
  v.insert(v.end(), terms_.begin(), terms_.end());
  if (!include_special_tokens) v.erase(v.begin(), v.begin() + token_start());
  return v;
}

void IntegerLookup::set_idf(std::vector<float> weights) {
  const auto n = static_cast<int64_t>(weights.size());
  Tensor t = Tensor::from_vector(weights, Shape{n});
  if (idf_ && idf_->shape() == t.shape()) {
    idf_->assign(t);
  } else {
    idf_.emplace(t, name_ + "/idf_weights", false);
  }
}

std::vector<float> IntegerLookup::idf_weights() const {
  if (!idf_) return {};
  return idf_->value().to("CPU:0").to_vector<float>();
}

void IntegerLookup::set_vocabulary(const std::vector<int64_t>& vocabulary,
                                   const std::optional<std::vector<double>>& idf_weights) {
  if (o_.output_mode == "tf_idf" && !idf_weights) {
    throw ValueError("`idf_weights` must be set if output_mode is 'tf_idf'.");
  }
  if (o_.output_mode != "tf_idf" && idf_weights) {
    throw ValueError(fmt::format("`idf_weights` should only be set if output_mode is `'tf_idf'`. Received: "
                                 "output_mode={} and idf_weights of {} values",
                                 o_.output_mode, idf_weights->size()));
  }
  if (vocabulary.empty()) throw ValueError("Cannot set an empty vocabulary. Received: vocabulary=[]");
  const auto start = static_cast<std::size_t>(token_start());
  std::vector<int64_t> special(static_cast<std::size_t>(oov_start()), o_.mask_token.value_or(0));
  special.insert(special.end(), static_cast<std::size_t>(o_.num_oov_indices), o_.oov_token);
  const bool found_special = vocabulary.size() >= start && std::equal(special.begin(), special.end(), vocabulary.begin());
  const std::vector<int64_t> tokens(vocabulary.begin() + (found_special ? static_cast<std::ptrdiff_t>(start) : 0),
                                    vocabulary.end());
  const std::set<int64_t> seen = unique_terms(tokens);
  auto misplaced = [&](const char* what, int64_t token) {
    const auto at = std::find(vocabulary.rbegin(), vocabulary.rend(), token);
    throw ValueError(fmt::format("Found reserved {} token at unexpected location in `vocabulary`. Note that passed "
                                 "`vocabulary` does not need to include the OOV and mask tokens. Either remove all "
                                 "mask and OOV tokens, or include them only at the start of the vocabulary in "
                                 "precisely this order: {}. Received: {}_token={} at vocabulary index {}",
                                 what, list_text(special), what == std::string("mask") ? "mask" : "oov", token,
                                 vocabulary.rend() - at - 1));
  };
  if (o_.mask_token && seen.count(*o_.mask_token)) misplaced("mask", *o_.mask_token);
  if (o_.invert && seen.count(o_.oov_token)) misplaced("OOV", o_.oov_token);
  const auto size = static_cast<int64_t>(start + tokens.size());
  if (o_.max_tokens && size > *o_.max_tokens) {
    throw ValueError(fmt::format("Attempted to set a vocabulary larger than the maximum vocab size. Received "
                                 "vocabulary size is {}; `max_tokens` is {}.",
                                 size, *o_.max_tokens));
  }
  if (size > kMaxVocabulary) {
    throw ValueError(fmt::format("IntegerLookup: a vocabulary of {} terms is over Osprey's 2^31", size));
  }
  std::vector<float> weights;
  if (idf_weights) {
    if (idf_weights->size() != vocabulary.size()) {
      throw ValueError(fmt::format("`idf_weights` must be the same length as vocabulary. len(idf_weights) is {}; "
                                   "len(vocabulary) is {}",
                                   idf_weights->size(), vocabulary.size()));
    }
    // Without the special tokens in the vocabulary their weights are the average (np.average, in double).
    if (!found_special) {
      double sum = 0;
      for (double w : *idf_weights) sum += w;
      weights.assign(start, static_cast<float>(sum / static_cast<double>(idf_weights->size())));
    }
    for (double w : *idf_weights) weights.push_back(static_cast<float>(w));
    if (o_.pad_to_max_tokens) weights.resize(static_cast<std::size_t>(*o_.max_tokens), 0.0f);
  }
  set_terms(tokens);
  if (idf_weights) set_idf(std::move(weights));
}

// Keras reads a path's lines into its table as they are (index_lookup.py's _lookup_table_from_file): no special
// tokens looked for, no max_tokens check.
void IntegerLookup::set_vocabulary_file(const std::string& path) {
  if (o_.output_mode == "tf_idf") {
    throw ValueError("output_mode `'tf_idf'` does not support loading a vocabulary from file.");
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    throw ValueError(fmt::format("Vocabulary file {} does not exist.", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ValueError(fmt::format("IntegerLookup '{}': the vocabulary file {} cannot be read", name_, path));
  std::vector<int64_t> terms = read_terms(in, name_, path);
  if (terms.empty()) throw ValueError(fmt::format("Cannot set an empty vocabulary. Received: vocabulary={}", path));
  (void)unique_terms(terms);
  if (token_start() + static_cast<int64_t>(terms.size()) > kMaxVocabulary) {
    throw ValueError(fmt::format("IntegerLookup: a vocabulary of {} terms is over Osprey's 2^31", terms.size()));
  }
  set_terms(std::move(terms));
}

// ---- adapt ----

void IntegerLookup::count(const Tensor& batch, bool rank1_is_one_document) {
  const std::vector<int64_t> v = int64_values(batch, name_);
  for (int64_t t : v) ++counts_[t];
  if (o_.output_mode != "tf_idf") return;
  const int r = batch.shape().rank();
  const int64_t docs = r == 0 || (r == 1 && rank1_is_one_document) ? 1 : batch.shape()[0];
  const int64_t width = docs ? static_cast<int64_t>(v.size()) / docs : 0;
  for (int64_t d = 0; d < docs; ++d) {
    const std::set<int64_t> unique(v.begin() + d * width, v.begin() + (d + 1) * width);
    for (int64_t t : unique) ++document_counts_[t];
  }
  documents_ += docs;
}

void IntegerLookup::finish_adapt() {
  if (counts_.empty()) {
    freeze_size(vocabulary_size());
    return;
  }
  if (o_.mask_token) counts_.erase(*o_.mask_token);
  counts_.erase(o_.oov_token);
  // By count, then by value, both descending (np.lexsort((tokens, counts))[::-1]).
  std::vector<std::pair<int64_t, int64_t>> order;  // (count, token)
  for (const auto& [token, n] : counts_) order.emplace_back(n, token);
  std::sort(order.begin(), order.end(), std::greater<>());
  if (o_.max_tokens) {
    const int64_t room = std::max<int64_t>(*o_.max_tokens - token_start(), 0);
    order.resize(std::min<std::size_t>(order.size(), static_cast<std::size_t>(room)));
  }
  std::vector<int64_t> tokens;
  for (const auto& e : order) tokens.push_back(e.second);
  set_terms(std::move(tokens));
  if (o_.output_mode == "tf_idf") {
    // log(1 + documents / (1 + document frequency)) in double, then float32 (Keras casts to floatx); the OOV
    // indices get their float32 mean.
    std::vector<float> w;
    for (int64_t t : terms_) {
      const double df = static_cast<double>(document_counts_[t]);
      w.push_back(static_cast<float>(std::log(1.0 + static_cast<double>(documents_) / (1.0 + df))));
    }
    float mean = 0;
    if (!w.empty()) {
      float sum = 0;  // tf.reduce_mean over float32
      for (float x : w) sum += x;
      mean = sum / static_cast<float>(w.size());
    }
    w.insert(w.begin(), static_cast<std::size_t>(token_start()), mean);
    if (o_.pad_to_max_tokens) w.resize(static_cast<std::size_t>(*o_.max_tokens), 0.0f);
    set_idf(std::move(w));
  }
  counts_.clear();
  document_counts_.clear();
  documents_ = 0;
}

void IntegerLookup::adapt(const Tensor& data) {
  if (has_input_vocabulary_) {
    throw ValueError(fmt::format("Cannot adapt layer '{}' after setting a static vocabulary via `vocabulary` "
                                 "argument or `set_vocabulary()` method.",
                                 name_));
  }
  counts_.clear(), document_counts_.clear(), documents_ = 0;
  // A rank-1 array is one value per document (Keras expands it to (n, 1)).
  count(data.shape().rank() == 1 ? data.reshape({data.shape()[0], 1}) : data, false);
  finish_adapt();
}

void IntegerLookup::adapt(const std::vector<Tensor>& batches) {
  if (has_input_vocabulary_) {
    throw ValueError(fmt::format("Cannot adapt layer '{}' after setting a static vocabulary via `vocabulary` "
                                 "argument or `set_vocabulary()` method.",
                                 name_));
  }
  counts_.clear(), document_counts_.clear(), documents_ = 0;
  for (const auto& b : batches) count(b, true);  // update_state: a rank-1 batch is one document
  finish_adapt();
}

// ---- call ----

std::vector<int64_t> IntegerLookup::lookup(const std::vector<int64_t>& values) const {
  std::vector<int64_t> out(values.size());
  if (o_.invert) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      const int64_t v = values[i], first = token_start();  // no subtraction before the check: v may be any int64
      const bool term = v >= first && v - first < static_cast<int64_t>(terms_.size());
      out[i] = term ? terms_[static_cast<std::size_t>(v - first)] : o_.oov_token;
      if (o_.mask_token && values[i] == 0) out[i] = *o_.mask_token;
    }
    return out;
  }
  const int64_t mask_value = o_.output_mode == "int" ? 0 : std::numeric_limits<int64_t>::max();
  std::vector<int64_t> missing;
  for (std::size_t i = 0; i < values.size(); ++i) {
    const int64_t v = values[i];
    if (o_.mask_token && v == *o_.mask_token) {
      out[i] = mask_value;
      continue;
    }
    if (auto it = index_of_.find(v); it != index_of_.end()) {
      out[i] = it->second;
      continue;
    }
    const int64_t n = o_.num_oov_indices;
    if (n == 0) {
      missing.push_back(v);
    } else if (n == 1) {
      out[i] = oov_start();
    } else if (o_.oov_method == "floormod") {
      out[i] = oov_start() + ((v % n) + n) % n;
    } else {  // tf.strings.to_hash_bucket_fast / _strong of the decimal text
      const std::string text = std::to_string(v);
      const uint64_t h = o_.salt ? hashing::siphash(o_.salt->first, o_.salt->second, text.data(), text.size())
                                 : hashing::fingerprint64(text.data(), text.size());
      out[i] = oov_start() + static_cast<int64_t>(h % static_cast<uint64_t>(n));
    }
  }
  if (!missing.empty()) {
    if (missing.size() > 10) missing.resize(10);
    throw InvalidArgumentError(fmt::format("IntegerLookup '{}': When `num_oov_indices=0` all inputs should be in "
                                           "vocabulary, found OOV values {}, consider setting `num_oov_indices=1`.",
                                           name_, list_text(missing)));
  }
  return out;
}

Shape IntegerLookup::build(const Shape& input_shape) {
  if (o_.output_mode == "int") return finish_build(input_shape);
  const std::string mode = o_.output_mode == "tf_idf" ? "count" : o_.output_mode;
  return finish_build(categorical::encoded_shape(input_shape, mode, depth(), name_, "IntegerLookup"));
}

Tensor IntegerLookup::call(const Tensor& inputs, bool) {
  const std::vector<int64_t> ids = lookup(int64_values(inputs, name_));
  if (o_.output_mode == "int") return categorical::on_device_of(Tensor::from_vector(ids, inputs.shape()), inputs);
  const int64_t d = depth();
  const bool tf_idf = o_.output_mode == "tf_idf";
  const auto dims = inputs.shape().dims();
  std::vector<double> encoded(ids.size());  // the mask's index (int64's largest) as the depth: left out likewise
  for (std::size_t i = 0; i < ids.size(); ++i) encoded[i] = static_cast<double>(std::min(ids[i], d));
  Tensor out = categorical::encode(encoded, std::vector<int64_t>(dims.begin(), dims.end()),
                                   tf_idf ? "count" : o_.output_mode, d, nullptr, name_, "IntegerLookup");
  if (tf_idf) {
    const std::vector<float> w = idf_weights();
    if (static_cast<int64_t>(w.size()) != d) {
      throw ValueError(fmt::format("IntegerLookup '{}': output_mode 'tf_idf' needs idf weights over its {} values "
                                   "(has {}): adapt() the layer or give its vocabulary with idf_weights",
                                   name_, d, w.size()));
    }
    float* p = out.data<float>();
    for (int64_t i = 0; i < out.num_elements(); ++i) p[i] *= w[static_cast<std::size_t>(i % d)];
  } else {
    out = out.cast(DType::int64);  // Keras encodes in the layer's index dtype: int64 (tf_idf: floatx)
  }
  return categorical::on_device_of(out, inputs);
}

// ---- saving ----

std::vector<std::pair<std::string, Variable*>> IntegerLookup::named_saved_variables() {
  if (o_.output_mode != "tf_idf") return {};
  if (!idf_) {  // a layer read from a config: the file's weights come into a variable of the encoded size
    if (!o_.pad_to_max_tokens && !frozen_size_) return {};
    set_idf(std::vector<float>(static_cast<std::size_t>(depth()), 0.0f));
  }
  return {{"idf_weights", &*idf_}};
}

std::vector<std::pair<std::string, std::string>> IntegerLookup::save_assets() const {
  if (o_.vocabulary) return {};  // in the config
  std::string text;
  for (int64_t t : get_vocabulary(true)) {
    if (!text.empty()) text += '\n';
    text += std::to_string(t);
  }
  return {{"vocabulary.txt", text}};
}

void IntegerLookup::load_assets(const std::vector<std::pair<std::string, std::string>>& files) {
  if (o_.vocabulary) return;
  const auto it = std::find_if(files.begin(), files.end(), [](const auto& f) { return f.first == "vocabulary.txt"; });
  if (it == files.end()) {
    throw ValueError(fmt::format("IntegerLookup '{}': the file has no vocabulary for it (assets/.../vocabulary.txt) "
                                 "and its config gives none",
                                 name_));
  }
  std::istringstream text(it->second);
  const std::vector<int64_t> values = read_terms(text, name_, "its vocabulary.txt");
  if (o_.output_mode == "tf_idf") {
    const std::vector<float> w = idf_weights();
    set_vocabulary(values, std::vector<double>(w.begin(), w.end()));
  } else {
    set_vocabulary(values);
  }
}

std::string IntegerLookup::get_config() const {
  json c = ser::base_config(*this);
  c["invert"] = o_.invert;
  c["max_tokens"] = o_.max_tokens ? json(*o_.max_tokens) : json();
  c["num_oov_indices"] = o_.num_oov_indices;
  c["oov_token"] = o_.oov_token;
  c["mask_token"] = o_.mask_token ? json(*o_.mask_token) : json();
  c["output_mode"] = o_.output_mode;
  c["sparse"] = o_.sparse;
  c["pad_to_max_tokens"] = o_.pad_to_max_tokens;
  c["vocabulary_dtype"] = o_.vocabulary_dtype;
  c["idf_weights"] = o_.idf_weights ? json(*o_.idf_weights) : json();
  c["vocabulary"] = o_.vocabulary ? json(*o_.vocabulary) : json();
  c["vocabulary_size"] = frozen_size_ ? json(*frozen_size_) : json();
  c["oov_method"] = o_.oov_method;
  c["salt"] = o_.salt ? json::array({o_.salt->first, o_.salt->second}) : json();
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(integer_lookup) {
  ser::register_layer_class("IntegerLookup", {false, [](const json& c) -> std::shared_ptr<Layer> {
    constexpr int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
    IntegerLookupOptions o;
    o.name = ser::name_of(c);
    if (c.contains("dtype")) o.dtype = ser::dtype_policy_name(c["dtype"]);
    o.invert = ser::value_or(c, "invert", false);
    if (c.contains("max_tokens") && !c["max_tokens"].is_null()) o.max_tokens = ser::integer(c, "max_tokens", 2, kMaxVocabulary, "IntegerLookup");
    if (c.contains("num_oov_indices")) o.num_oov_indices = ser::integer(c, "num_oov_indices", 0, kMaxVocabulary, "IntegerLookup");
    if (c.contains("mask_token") && !c["mask_token"].is_null()) o.mask_token = ser::integer(c, "mask_token", lo, hi, "IntegerLookup");
    if (c.contains("oov_token") && !c["oov_token"].is_null()) o.oov_token = ser::integer(c, "oov_token", lo, hi, "IntegerLookup");
    o.output_mode = ser::value_or<std::string>(c, "output_mode", "int");
    o.sparse = ser::value_or(c, "sparse", false);
    o.pad_to_max_tokens = ser::value_or(c, "pad_to_max_tokens", false);
    o.vocabulary_dtype = ser::value_or<std::string>(c, "vocabulary_dtype", "int64");
    o.oov_method = ser::value_or<std::string>(c, "oov_method", "floormod");
    if (c.contains("vocabulary") && !c["vocabulary"].is_null()) {
      if (c["vocabulary"].is_string()) {
        throw ValueError(fmt::format("IntegerLookup: a vocabulary file ('{}') outside the model file is not read "
                                     "(Keras's safe mode refuses it too); give the vocabulary as a list",
                                     c["vocabulary"].get<std::string>()));
      }
      o.vocabulary = ser::integers(c, "vocabulary", lo, hi, "IntegerLookup", static_cast<std::size_t>(kMaxVocabulary));
    }
    if (c.contains("idf_weights") && !c["idf_weights"].is_null()) {
      const json& w = c["idf_weights"];
      if (!w.is_array() || w.size() > static_cast<std::size_t>(kMaxVocabulary)) {
        throw ValueError("IntegerLookup: idf_weights must be a list of numbers");
      }
      o.idf_weights.emplace();
      for (const auto& x : w) {
        if (!x.is_number()) throw ValueError(fmt::format("IntegerLookup: idf_weights holds {}, not a number", x.dump()));
        o.idf_weights->push_back(x.get<double>());
      }
    }
    if (c.contains("salt") && !c["salt"].is_null()) o.salt = categorical::salt_from(c["salt"], "IntegerLookup");
    auto layer = std::make_shared<IntegerLookup>(std::move(o));
    if (c.contains("vocabulary_size") && !c["vocabulary_size"].is_null()) {
      layer->set_saved_vocabulary_size(ser::integer(c, "vocabulary_size", 0, kMaxVocabulary, "IntegerLookup"));
    }
    return layer;
  }});
}

}  // namespace osprey::keras::layers
