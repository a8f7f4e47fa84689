// keras.layers.Hashing and HashedCrossing: integer (and float) features, or crosses of them, hashed into bins as
// Keras's TensorFlow backend hashes them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// keras.layers.Hashing's arguments.
struct HashingOptions {
  /// A value that goes to bin 0 (the others then hash into bins 1 .. num_bins - 1).
  std::optional<double> mask_value{};
  /// The key of the keyed (SipHash) hash: Keras's salt, one integer (used twice) or a pair. None: FarmHash's
  /// Fingerprint64, TensorFlow's to_hash_bucket_fast.
  std::optional<std::pair<uint64_t, uint64_t>> salt{};
  /// "int" (the bin, in the layer's integer dtype), "one_hot", "multi_hot" or "count" (CategoryEncoding's rules,
  /// float32).
  std::string output_mode = "int";
  bool sparse = false;  ///< Osprey has no sparse tensors (true is a ValueError)
  std::string name{};
  /// The layer's dtype: default "int64" for output_mode "int" (or "int32"), "float32" otherwise.
  std::string dtype{};
};

/// keras.layers.Hashing(num_bins): each value's bin, as Keras computes it on TensorFlow: floats truncated to int64,
/// every value written as tf.as_string writes it (decimal; booleans "true" and "false") and hashed with FarmHash Fingerprint64 (or SipHash-2-4 keyed by
/// the salt), modulo the bins. Computes on the host; Osprey's tensors hold numbers only (no strings).
class Hashing : public Layer {
 public:
  Hashing(int64_t num_bins, HashingOptions options = {});
  OSPREY_KERAS_LAYER(Hashing)
  std::string class_name() const override { return "Hashing"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// The bin of one integer value (the mask not applied).
  int64_t bin_of(int64_t value) const;

 private:
  int64_t bin_of_text(const std::string& text) const;
  int64_t num_bins_;
  HashingOptions o_;
  DType int_dtype_ = DType::int64;
};

/// keras.layers.HashedCrossing(num_bins): the bin of each row's combination of integer features (two or more inputs
/// of one shape, (batch,) or (batch, 1)), as tf.sparse.cross_hashed computes it: FarmHash's FingerprintCat64 over
/// the int64 values from TensorFlow's key 0xDECAFCAFFE, modulo the bins. output_mode "int" (int64, or the int32
/// dtype) or "one_hot" (float32). Computes on the host.
class HashedCrossing : public Layer {
 public:
  HashedCrossing(int64_t num_bins, std::string output_mode = "int", std::string name = "", std::string dtype = "",
                 bool sparse = false);
  OSPREY_KERAS_LAYER(HashedCrossing)
  std::string class_name() const override { return "HashedCrossing"; }
  int num_inputs() const override { return 0; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Shape build(const std::vector<Shape>& input_shapes) override;
  Tensor call(const Tensor& inputs, bool training) override;
  Tensor call(const std::vector<Tensor>& inputs, bool training) override;

 private:
  int64_t num_bins_;
  std::string output_mode_;
  DType int_dtype_ = DType::int64;
};

namespace hashing {
/// FarmHash's Fingerprint64 (farmhashna::Hash64) of bytes: TensorFlow's Fingerprint64 and to_hash_bucket_fast.
uint64_t fingerprint64(const char* data, std::size_t size);
/// SipHash-2-4 keyed by (k0, k1): TensorFlow's StrongKeyedHash and to_hash_bucket_strong.
uint64_t siphash(uint64_t k0, uint64_t k1, const char* data, std::size_t size);
/// TensorFlow's FingerprintCat64: a fingerprint of two fingerprints (sparse_cross's hashed combination).
uint64_t fingerprint_cat64(uint64_t fp1, uint64_t fp2);
}  // namespace hashing

}  // namespace osprey::keras::layers
