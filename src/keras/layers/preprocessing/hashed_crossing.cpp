// keras.layers.HashedCrossing as Keras's TensorFlow backend computes it (tf.sparse.cross_hashed on inputs of one
// feature per row): TensorFlow's FingerprintCat64 folded over the int64 values from the key 0xDECAFCAFFE, modulo
// the bins; "one_hot" through CategoryEncoding's encoding.
#include <fmt/format.h>

#include "keras/layers/preprocessing/categorical_common.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/hashing.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using ser::json;

namespace hashing {

uint64_t fingerprint_cat64(uint64_t fp1, uint64_t fp2) {
  constexpr uint64_t kMul = 0xc6a4a7935bd1e995ULL;
  auto shift_mix = [](uint64_t v) { return v ^ (v >> 47); };
  uint64_t r = fp1 ^ kMul;
  r ^= shift_mix(fp2 * kMul) * kMul;
  r *= kMul;
  r = shift_mix(r) * kMul;
  return shift_mix(r);
}

}  // namespace hashing

namespace {

constexpr uint64_t kCrossKey = 0xDECAFCAFFEULL;  // tf.sparse.cross_hashed's default hash_key

}  // namespace

HashedCrossing::HashedCrossing(int64_t num_bins, std::string output_mode, std::string name, std::string dtype,
                               bool sparse)
    : Layer(name, "hashed_crossing", dtype.empty() ? (output_mode == "int" ? "int64" : "float32") : dtype),
      num_bins_(num_bins), output_mode_(std::move(output_mode)) {
  if (output_mode_ != "int" && output_mode_ != "one_hot") {
    throw ValueError(fmt::format("The `output_mode` argument of HashedCrossing should be one of \"int\", \"one_hot\". "
                                 "Received: output_mode={}",
                                 output_mode_));
  }
  if (num_bins <= 0 || num_bins > (int64_t{1} << 31)) {
    throw ValueError(fmt::format("HashedCrossing: num_bins must be in [1, 2^31]; received {}", num_bins));
  }
  categorical::no_sparse(sparse, "HashedCrossing");
  const std::string& policy = dtype_policy().name();
  int_dtype_ = policy == "int32" ? DType::int32 : DType::int64;
}

Shape HashedCrossing::build(const Shape&) {
  throw ValueError(fmt::format("`HashedCrossing` ('{}') should be called on a list or tuple of at least two inputs",
                               name_));
}

Shape HashedCrossing::build(const std::vector<Shape>& shapes) {
  if (shapes.size() < 2) {
    throw ValueError(fmt::format("`HashedCrossing` should be called on at least two inputs. Received: {} input",
                                 shapes.size()));
  }
  for (const auto& s : shapes) {
    if (s != shapes[0]) {
      throw ValueError(fmt::format("Expected the two input tensors to have identical shapes. Received input_shape={} "
                                   "and {}",
                                   shapes[0].to_string(), s.to_string()));
    }
  }
  // One feature per row: (batch,) or (batch, 1); tf.sparse.cross_hashed of wider rows gives every combination,
  // which Keras cannot shape back either.
  if (shapes[0].rank() > 1 || (shapes[0].rank() == 1 && shapes[0][0] != 1)) {
    throw ValueError(fmt::format("HashedCrossing '{}' crosses one feature per sample: inputs (batch,) or (batch, 1); "
                                 "received samples of shape {}",
                                 name_, shapes[0].to_string()));
  }
  if (output_mode_ == "int") return finish_build(shapes[0]);
  return finish_build(Shape({num_bins_}));
}

Tensor HashedCrossing::call(const Tensor& inputs, bool training) { return call(std::vector<Tensor>{inputs}, training); }

Tensor HashedCrossing::call(const std::vector<Tensor>& inputs, bool) {
  if (inputs.size() < 2) {
    throw ValueError(fmt::format("`HashedCrossing` should be called on at least two inputs. Received: {} input",
                                 inputs.size()));
  }
  std::vector<std::vector<int64_t>> columns;
  for (const auto& t : inputs) {
    if (t.dtype() != DType::int32 && t.dtype() != DType::int64) {
      throw ValueError(fmt::format("All `HashedCrossing` inputs should have an integer or string dtype. Received: "
                                   "an input of dtype {}",
                                   dtype_name(t.dtype())));
    }
    if (t.shape() != inputs[0].shape() || t.shape().rank() > 2 || (t.shape().rank() == 2 && t.shape()[1] != 1)) {
      throw ValueError(fmt::format("HashedCrossing '{}' takes inputs of one shape, (batch,) or (batch, 1); received "
                                   "{} and {}",
                                   name_, inputs[0].shape().to_string(), t.shape().to_string()));
    }
    columns.push_back(t.cast(DType::int64).to_vector<int64_t>());
  }
  const std::size_t rows = columns[0].size();
  std::vector<int64_t> bins(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    uint64_t h = kCrossKey;
    for (const auto& col : columns) h = hashing::fingerprint_cat64(h, static_cast<uint64_t>(col[r]));
    bins[r] = static_cast<int64_t>(h % static_cast<uint64_t>(num_bins_));
  }
  if (output_mode_ == "int") {
    const Tensor out = Tensor::from_vector(bins, inputs[0].shape());
    return categorical::on_device_of(int_dtype_ == DType::int64 ? out : out.cast(int_dtype_), inputs[0]);
  }
  const int64_t n = static_cast<int64_t>(rows);
  return categorical::on_device_of(categorical::encode(std::vector<double>(bins.begin(), bins.end()), {n, 1},
                                                       "one_hot", num_bins_, nullptr, name_, "HashedCrossing"),
                                   inputs[0]);
}

std::string HashedCrossing::get_config() const {  // Keras writes only these, the dtype as a name
  return ser::dumps(json{{"num_bins", num_bins_},
                         {"output_mode", output_mode_},
                         {"sparse", false},
                         {"name", name_},
                         {"dtype", dtype_policy().name()}});
}

OSPREY_REGISTER_LAYERS(hashed_crossing) {
  ser::register_layer_class("HashedCrossing", {true, [](const json& c) -> std::shared_ptr<Layer> {
    if (!c.contains("num_bins") || c["num_bins"].is_null()) {
      throw ValueError("HashedCrossing: the config has no num_bins");
    }
    return std::make_shared<HashedCrossing>(
        ser::integer(c, "num_bins", 1, int64_t{1} << 31, "HashedCrossing"),
        ser::value_or<std::string>(c, "output_mode", "int"), ser::name_of(c),
        c.contains("dtype") ? ser::dtype_policy_name(c["dtype"]) : std::string(), ser::value_or(c, "sparse", false));
  }});
}

}  // namespace osprey::keras::layers
