// The encodings CategoryEncoding, Discretization and Hashing share (keras.src.utils.numerical_utils'
// encode_categorical_inputs on the TensorFlow backend), computed on the host; defined in categorical.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "keras/saving/serialization.h"
#include "osprey/tensor.h"

namespace osprey::keras::layers::categorical {

/// The values of x on the host as doubles.
std::vector<double> host_values(const Tensor& x);
/// t on like's device.
Tensor on_device_of(const Tensor& t, const Tensor& like);
/// CategoryEncoding's or Discretization's output mode as the layer keeps it ("binary" is CategoryEncoding's old name
/// of "multi_hot"); ValueError naming the layer for an unknown one ("int" only for Discretization).
std::string canonical_mode(std::string mode, bool discretization);
/// ValueError for sparse = true: Osprey has no sparse tensors.
void no_sparse(bool sparse, const char* layer);
/// The output's sample shape (no batch axis) for inputs of sample shape `in` under Keras's rules.
Shape encoded_shape(const Shape& in, const std::string& mode, int64_t depth, const std::string& layer, const char* cls);
/// ids (of `dims`) encoded by `mode` ("one_hot", "multi_hot", "count") over `depth` values, float32; weights (the
/// ids' shape) for "count".
Tensor encode(const std::vector<double>& ids, std::vector<int64_t> dims, const std::string& mode, int64_t depth,
              const std::vector<double>* weights, const std::string& layer, const char* cls);

/// A config's "salt" (Hashing, IntegerLookup): one integer used twice, or a pair; ValueError naming `layer`
/// otherwise.
std::pair<uint64_t, uint64_t> salt_from(const serialization::json& salt, const char* layer);

}  // namespace osprey::keras::layers::categorical
