// keras.layers.IntegerLookup: integer features mapped to contiguous indices through a vocabulary (given, or learned
// by adapt()), and back with invert; encoded as CategoryEncoding encodes (one_hot, multi_hot, count, tf_idf).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// keras.layers.IntegerLookup's arguments (its defaults).
struct IntegerLookupOptions {
  /// The vocabulary's largest size, mask and OOV indices included (> 1); none: unbounded.
  std::optional<int64_t> max_tokens{};
  /// How many indices out-of-vocabulary values share (0: such a value is an error; more than 1: spread by
  /// `oov_method`).
  int64_t num_oov_indices = 1;
  /// A value that maps to index 0 ("int" output) or is left out of the encodings; none: no mask.
  std::optional<int64_t> mask_token{};
  /// What invert=true returns for OOV indices.
  int64_t oov_token = -1;
  /// The vocabulary, instead of adapt() (it may start with the mask and OOV tokens, in that order).
  std::optional<std::vector<int64_t>> vocabulary{};
  /// Or the vocabulary as a text file's path (Keras's `vocabulary` given as a string): one term per line, the
  /// lines' terms from index token_start() on as TensorFlow's TextFileInitializer gives them (no special tokens
  /// looked for). Read here; a saved layer carries it in the .keras file's assets, as Keras does, not the path.
  std::optional<std::string> vocabulary_file{};
  /// tf_idf's weights, one per vocabulary term (with the vocabulary; required with it for "tf_idf").
  std::optional<std::vector<double>> idf_weights{};
  /// Indices back to tokens ("int" output only).
  bool invert = false;
  /// "int" (int64 indices), "one_hot", "multi_hot" ("binary") or "count" (int64, as Keras gives them), or
  /// "tf_idf" ("tf-idf"; float32).
  std::string output_mode = "int";
  bool sparse = false;  ///< Osprey has no sparse tensors (true is a ValueError)
  /// Encode over max_tokens values instead of the vocabulary's size.
  bool pad_to_max_tokens = false;
  /// How several OOV indices are chosen: "floormod" (value mod num_oov_indices) or "farmhash" (the decimal text's
  /// FarmHash fingerprint, or SipHash keyed by `salt`).
  std::string oov_method = "floormod";
  std::optional<std::pair<uint64_t, uint64_t>> salt{};
  std::string vocabulary_dtype = "int64";  ///< Keras takes int64 only
  std::string name{};
  std::string dtype{};
};

/// keras.layers.IntegerLookup as Keras 3 computes it on TensorFlow: each value's index in the vocabulary (mask
/// token first when there is one and the output is "int", then the OOV indices, then the terms); adapt() keeps
/// the most frequent values (ties: the larger value first) up to max_tokens. The vocabulary travels in .keras
/// files as Keras writes it: in the config when it was given, else as assets/.../vocabulary.txt; tf_idf's
/// weights as the layer's "idf_weights" in the weights file (not among variables(), as in Keras). Computes on
/// the host: a data layer, no gradient flows through it.
class IntegerLookup : public Layer {
 public:
  explicit IntegerLookup(IntegerLookupOptions options = {});
  OSPREY_KERAS_LAYER(IntegerLookup)
  std::string class_name() const override { return "IntegerLookup"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;

  /// Learns the vocabulary (and tf_idf's document frequencies) from `data`: a rank-1 tensor is one value per
  /// document, higher ranks one document per row. ValueError for a layer given its vocabulary.
  void adapt(const Tensor& data);
  /// The same over batches (each batch's rows are documents; a rank-1 batch is one document).
  void adapt(const std::vector<Tensor>& batches);
  /// Replaces the vocabulary (and tf_idf's weights, required then and refused otherwise).
  void set_vocabulary(const std::vector<int64_t>& vocabulary,
                      const std::optional<std::vector<double>>& idf_weights = std::nullopt);
  /// Replaces the vocabulary with a text file's terms (Keras's set_vocabulary with a path; see
  /// IntegerLookupOptions::vocabulary_file). ValueError for a missing file, a line that is not an int64 value, a
  /// repeated term, or the "tf_idf" mode (which Keras does not load from files).
  void set_vocabulary_file(const std::string& path);
  /// The terms by index (index i is what call() gives for the i-th); without the mask and OOV tokens when
  /// `include_special_tokens` is false.
  std::vector<int64_t> get_vocabulary(bool include_special_tokens = true) const;
  /// The vocabulary's size, mask and OOV indices included.
  int64_t vocabulary_size() const;
  /// The vocabulary size a saved layer had (Keras's from_config argument `vocabulary_size`): the encoded depth
  /// before the vocabulary itself is loaded from the file's assets. RuntimeError where an encoding's size is
  /// already another.
  void set_saved_vocabulary_size(int64_t size);
  /// tf_idf's weights over the encoded depth (empty for other modes or before they are known).
  std::vector<float> idf_weights() const;

  std::vector<std::pair<std::string, Variable*>> named_saved_variables() override;
  std::vector<std::pair<std::string, std::string>> save_assets() const override;
  void load_assets(const std::vector<std::pair<std::string, std::string>>& files) override;

 private:
  int64_t oov_start() const { return o_.mask_token && o_.output_mode == "int" ? 1 : 0; }
  int64_t token_start() const { return oov_start() + o_.num_oov_indices; }
  int64_t depth() const;
  /// The terms from index token_start() on, once the vocabulary's size is allowed (RuntimeError where an
  /// encoding's size would change; nothing changes then).
  void set_terms(std::vector<int64_t> terms);
  /// Keras's _record_vocabulary_size: the encoded size, which may not change for encodings unless padded.
  void freeze_size(int64_t size);
  void set_idf(std::vector<float> weights);
  void count(const Tensor& batch, bool rank1_is_one_document);
  void finish_adapt();
  std::vector<int64_t> lookup(const std::vector<int64_t>& values) const;

  IntegerLookupOptions o_;
  bool has_input_vocabulary_ = false;
  std::vector<int64_t> terms_;             ///< the terms in index order, from token_start()
  std::map<int64_t, int64_t> index_of_;    ///< term -> index
  std::optional<int64_t> frozen_size_;     ///< Keras's _frozen_vocab_size ("vocabulary_size" in the config)
  std::optional<Variable> idf_;            ///< tf_idf's weights, float32
  std::map<int64_t, int64_t> counts_, document_counts_;  ///< adapt()'s state
  int64_t documents_ = 0;
};

}  // namespace osprey::keras::layers
