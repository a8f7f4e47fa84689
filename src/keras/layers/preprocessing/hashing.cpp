// keras.layers.Hashing as Keras's TensorFlow backend computes it: floats cast to int64, every value written as
// tf.as_string writes it (decimal), hashed by FarmHash's Fingerprint64 (to_hash_bucket_fast) or SipHash-2-4 keyed
// by the salt (to_hash_bucket_strong), modulo the bins; a mask value to bin 0 and the rest shifted up by one; then
// CategoryEncoding's encodings. Both hashes are written from their published definitions (FarmHash's
// farmhashna::Hash64 for inputs up to 32 bytes — a decimal int64 has at most 20 — and SipHash-2-4) and checked
// against TensorFlow's buckets in tests/keras/test_hashing.cpp.
#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "keras/layers/preprocessing/categorical_common.h"
#include "keras/saving/serialization.h"
#include "osprey/errors.h"
#include "osprey/keras/layers/hashing.h"

namespace osprey::keras::layers {

namespace ser = serialization;
using ser::json;

namespace hashing {

namespace {

constexpr uint64_t kK0 = 0xc3a5c85c97cb3127ULL, kK1 = 0xb492b66fbe98f273ULL, kK2 = 0x9ae16a3b2f90404fULL;

uint64_t fetch64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;  // little-endian hosts (x86-64, aarch64), as the hashes are defined
}
uint32_t fetch32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t rotate(uint64_t v, int shift) { return shift == 0 ? v : (v >> shift) | (v << (64 - shift)); }
uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }
uint64_t hash_len16(uint64_t u, uint64_t v, uint64_t mul) {
  uint64_t a = (u ^ v) * mul;
  a ^= a >> 47;
  uint64_t b = (v ^ a) * mul;
  b ^= b >> 47;
  return b * mul;
}

uint64_t hash_len0to16(const char* s, std::size_t len) {
  const uint64_t n = len;
  if (len >= 8) {
    const uint64_t mul = kK2 + n * 2, a = fetch64(s) + kK2, b = fetch64(s + len - 8);
    const uint64_t c = rotate(b, 37) * mul + a, d = (rotate(a, 25) + b) * mul;
    return hash_len16(c, d, mul);
  }
  if (len >= 4) {
    const uint64_t mul = kK2 + n * 2, a = fetch32(s);
    return hash_len16(n + (a << 3), fetch32(s + len - 4), mul);
  }
  if (len > 0) {
    const auto a = static_cast<uint8_t>(s[0]), b = static_cast<uint8_t>(s[len >> 1]), c = static_cast<uint8_t>(s[len - 1]);
    const uint32_t y = static_cast<uint32_t>(a) + (static_cast<uint32_t>(b) << 8);
    const uint32_t z = static_cast<uint32_t>(len) + (static_cast<uint32_t>(c) << 2);
    return shift_mix(y * kK2 ^ z * kK0) * kK2;
  }
  return kK2;
}

uint64_t hash_len17to32(const char* s, std::size_t len) {
  const uint64_t mul = kK2 + len * 2, a = fetch64(s) * kK1, b = fetch64(s + 8);
  const uint64_t c = fetch64(s + len - 8) * mul, d = fetch64(s + len - 16) * kK2;
  return hash_len16(rotate(a + b, 43) + rotate(c, 30) + d, a + rotate(b + kK2, 18) + c, mul);
}

}  // namespace

uint64_t fingerprint64(const char* data, std::size_t size) {
  if (size > 32) {
    throw InvalidArgumentError(fmt::format("fingerprint64: Osprey hashes up to 32 bytes (decimal numbers); got {}",
                                           size));
  }
  return size <= 16 ? hash_len0to16(data, size) : hash_len17to32(data, size);
}

uint64_t siphash(uint64_t k0, uint64_t k1, const char* data, std::size_t size) {
  uint64_t v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
  uint64_t v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
  auto round = [&] {
    v0 += v1, v1 = rotate(v1, 51), v1 ^= v0, v0 = rotate(v0, 32);
    v2 += v3, v3 = rotate(v3, 48), v3 ^= v2;
    v0 += v3, v3 = rotate(v3, 43), v3 ^= v0;
    v2 += v1, v1 = rotate(v1, 47), v1 ^= v2, v2 = rotate(v2, 32);
  };
  const std::size_t full = size / 8 * 8;
  for (std::size_t i = 0; i < full; i += 8) {
    const uint64_t m = fetch64(data + i);
    v3 ^= m;
    round();
    round();
    v0 ^= m;
  }
  uint64_t last = static_cast<uint64_t>(size & 0xff) << 56;
  for (std::size_t i = full; i < size; ++i) last |= static_cast<uint64_t>(static_cast<uint8_t>(data[i])) << (8 * (i - full));
  v3 ^= last;
  round();
  round();
  v0 ^= last;
  v2 ^= 0xff;
  for (int i = 0; i < 4; ++i) round();
  return v0 ^ v1 ^ v2 ^ v3;
}

}  // namespace hashing

Hashing::Hashing(int64_t num_bins, HashingOptions options)
    : Layer(options.name, "hashing",
            options.dtype.empty() ? (options.output_mode == "int" ? "int64" : "float32") : options.dtype),
      num_bins_(num_bins), o_(std::move(options)) {
  if (num_bins <= 0) {
    throw ValueError(fmt::format("The `num_bins` for `Hashing` cannot be `None` or non-positive values. Received: "
                                 "num_bins={}.",
                                 num_bins));
  }
  if (num_bins > (int64_t{1} << 31)) {
    throw ValueError(fmt::format("Hashing: num_bins is at most 2^31 in Osprey; received {}", num_bins));
  }
  const std::string& policy = dtype_policy().name();
  if (o_.output_mode == "int" && policy != "int32" && policy != "int64") {
    throw ValueError(fmt::format("When `output_mode=\"int\"`, `dtype` should be an integer type, 'int32' or 'in64'. "
                                 "Received: dtype={}",
                                 policy));
  }
  if (o_.output_mode != "int" && o_.output_mode != "one_hot" && o_.output_mode != "multi_hot" &&
      o_.output_mode != "count") {
    throw ValueError(fmt::format("Invalid value for argument `output_mode`. Expected one of ('int', 'one_hot', "
                                 "'multi_hot', 'count'). Received: output_mode={}",
                                 o_.output_mode));
  }
  if (o_.sparse && o_.output_mode == "int") {
    throw ValueError(fmt::format("`sparse` may only be true if `output_mode` is `\"one_hot\"`, `\"multi_hot\"`, or "
                                 "`\"count\"`. Received: sparse=True and output_mode={}",
                                 o_.output_mode));
  }
  categorical::no_sparse(o_.sparse, "Hashing");
  int_dtype_ = policy == "int32" ? DType::int32 : DType::int64;
}

int64_t Hashing::bin_of(int64_t value) const { return bin_of_text(std::to_string(value)); }

int64_t Hashing::bin_of_text(const std::string& text) const {
  const int64_t bins = o_.mask_value && num_bins_ > 1 ? num_bins_ - 1 : num_bins_;
  const uint64_t h = o_.salt ? hashing::siphash(o_.salt->first, o_.salt->second, text.data(), text.size())
                             : hashing::fingerprint64(text.data(), text.size());
  return static_cast<int64_t>(h % static_cast<uint64_t>(bins));
}

Shape Hashing::build(const Shape& input_shape) {
  return finish_build(categorical::encoded_shape(input_shape, o_.output_mode, num_bins_, name_, "Hashing"));
}

Tensor Hashing::call(const Tensor& inputs, bool) {
  // The values exactly (an int64 keeps all its digits); floats truncated toward zero as tf.cast to int64.
  std::vector<int64_t> values;
  const bool boolean = inputs.dtype() == DType::bool_;
  const bool integer = inputs.dtype() == DType::int32 || inputs.dtype() == DType::int64 || boolean;
  if (integer) {
    values = inputs.cast(DType::int64).to_vector<int64_t>();
  } else {
    for (double v : categorical::host_values(inputs)) {
      // TensorFlow's cast of NaN or of a float beyond int64 is platform-defined; Osprey takes int64's minimum.
      values.push_back(std::isfinite(v) && std::abs(v) < 9.2e18 ? static_cast<int64_t>(std::trunc(v))
                                                                  : std::numeric_limits<int64_t>::min());
    }
  }
  const bool mask = o_.mask_value && num_bins_ > 1;
  std::vector<double> raw = mask && !integer ? categorical::host_values(inputs) : std::vector<double>();
  std::vector<int64_t> bins(values.size());
  for (std::size_t i = 0; i < values.size(); ++i) {
    int64_t b = boolean ? bin_of_text(values[i] ? "true" : "false") : bin_of(values[i]);  // tf.as_string's words
    if (mask) {
      const bool is_mask = integer ? static_cast<double>(values[i]) == *o_.mask_value : raw[i] == *o_.mask_value;
      b = is_mask ? 0 : b + 1;
    }
    bins[i] = b;
  }
  if (o_.output_mode == "int") {
    const Tensor out = Tensor::from_vector(bins, inputs.shape());
    return categorical::on_device_of(int_dtype_ == DType::int64 ? out : out.cast(int_dtype_), inputs);
  }
  const auto d = inputs.shape().dims();
  return categorical::on_device_of(categorical::encode(std::vector<double>(bins.begin(), bins.end()),
                                                       std::vector<int64_t>(d.begin(), d.end()), o_.output_mode,
                                                       num_bins_, nullptr, name_, "Hashing"),
                                   inputs);
}

std::string Hashing::get_config() const {
  json c = ser::base_config(*this);
  c["num_bins"] = num_bins_;
  c["salt"] = o_.salt ? json::array({o_.salt->first, o_.salt->second}) : json();
  c["mask_value"] = !o_.mask_value                              ? json()
                    : *o_.mask_value == std::trunc(*o_.mask_value) ? json(static_cast<int64_t>(*o_.mask_value))
                                                                  : json(*o_.mask_value);
  c["output_mode"] = o_.output_mode;
  c["sparse"] = o_.sparse;
  return ser::dumps(c);
}

OSPREY_REGISTER_LAYERS(hashing) {
  ser::register_layer_class("Hashing", {true, [](const json& c) -> std::shared_ptr<Layer> {
    HashingOptions o;
    o.name = ser::name_of(c);
    o.output_mode = ser::value_or<std::string>(c, "output_mode", "int");
    o.sparse = ser::value_or(c, "sparse", false);
    if (c.contains("mask_value") && !c["mask_value"].is_null()) {
      o.mask_value = ser::number(c, "mask_value", -1.7e308, 1.7e308, "Hashing");
    }
    if (c.contains("salt") && !c["salt"].is_null()) o.salt = categorical::salt_from(c["salt"], "Hashing");
    if (c.contains("dtype")) o.dtype = ser::dtype_policy_name(c["dtype"]);
    if (!c.contains("num_bins") || c["num_bins"].is_null()) {
      throw ValueError("The `num_bins` for `Hashing` cannot be `None` or non-positive values. Received: num_bins=None.");
    }
    return std::make_shared<Hashing>(ser::integer(c, "num_bins", 1, int64_t{1} << 31, "Hashing"), std::move(o));
  }});
}

}  // namespace osprey::keras::layers
