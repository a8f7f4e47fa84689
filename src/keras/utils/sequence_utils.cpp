// keras.utils.pad_sequences: ragged sequences as one tensor, padded and truncated as Keras does; on the host.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>

#include "data/pipeline.h"
#include "osprey/errors.h"
#include "osprey/keras/data.h"

namespace osprey::keras::utils {

namespace {

void check_options(const PadSequencesOptions& o) {
  if (o.padding != "pre" && o.padding != "post") {
    throw ValueError(fmt::format("Padding type \"{}\" not understood (pad_sequences takes \"pre\" or \"post\")",
                                 o.padding));
  }
  if (o.truncating != "pre" && o.truncating != "post") {
    throw ValueError(fmt::format("Truncating type \"{}\" not understood (pad_sequences takes \"pre\" or \"post\")",
                                 o.truncating));
  }
  if (o.maxlen && *o.maxlen < 0) {
    throw ValueError(fmt::format("pad_sequences: maxlen must be non-negative, got {}", *o.maxlen));
  }
}

// The padding value in dtype (NumPy's np.full casts it: a fraction truncated toward zero for integers).
Tensor padding_value(const PadSequencesOptions& o) {
  if (o.dtype == DType::int32 || o.dtype == DType::int64) {
    const double lo = o.dtype == DType::int32 ? -2147483648.0 : -9223372036854775808.0;
    if (!std::isfinite(o.value) || std::trunc(o.value) < lo || std::trunc(o.value) >= -lo) {
      throw ValueError(fmt::format("pad_sequences: the padding value {} does not fit dtype {}", o.value,
                                   dtype_name(o.dtype)));
    }
  }
  return Tensor::full(Shape({1}), o.value, o.dtype).to(data::detail::host());
}

}  // namespace

Tensor pad_sequences(const std::vector<Tensor>& sequences, const PadSequencesOptions& options) {
  check_options(options);
  // The sample shape from the first non-empty sequence; each sequence's steps along its first axis.
  std::vector<int64_t> sample;
  bool have_sample = false;
  int64_t longest = 0;
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const Tensor& s = sequences[i];
    if (!s.defined() || s.shape().rank() == 0) {
      throw ValueError(fmt::format("`sequences` must be a list of iterables. Found non-iterable at position {}: {}", i,
                                   s.defined() ? s.to_string() : "an undefined tensor"));
    }
    const std::vector<int64_t> dims = s.shape().dims_vector();
    longest = std::max(longest, dims[0]);
    if (dims[0] == 0) continue;
    const std::vector<int64_t> rest(dims.begin() + 1, dims.end());
    if (!have_sample) {
      sample = rest, have_sample = true;
    } else if (rest != sample) {
      throw ValueError(fmt::format("Shape of sample {} of sequence at position {} is different from expected shape {}",
                                   Shape(rest).to_string(), i, Shape(sample).to_string()));
    }
  }
  if (!options.maxlen && sequences.empty()) {
    throw ValueError("pad_sequences: no sequences to take maxlen from; pass maxlen for an empty list");
  }
  const int64_t maxlen = options.maxlen.value_or(longest);
  int64_t step = 1;  // elements per step
  for (int64_t d : sample) step *= d;
  const int64_t rows = static_cast<int64_t>(sequences.size());
  if (step > 0 && maxlen > 0 && rows > std::numeric_limits<int64_t>::max() / 16 / maxlen / step) {
    throw ValueError(fmt::format("pad_sequences: {} sequences of maxlen {} (steps of {} values) are too many values "
                                 "for one tensor",
                                 rows, maxlen, step));
  }
  std::vector<int64_t> dims{rows, maxlen};
  dims.insert(dims.end(), sample.begin(), sample.end());
  const Shape shape(dims);
  const std::size_t width = dtype_size(options.dtype);
  const Tensor fill = padding_value(options);
  Tensor out = Tensor::empty(shape, options.dtype, &data::detail::host());
  auto* base = static_cast<unsigned char*>(out.raw_data());
  const std::size_t row_bytes = static_cast<std::size_t>(maxlen * step) * width;
  for (std::size_t i = 0; i < static_cast<std::size_t>(maxlen * step) * sequences.size(); ++i) {
    std::memcpy(base + i * width, fill.raw_data(), width);
  }
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const int64_t len = sequences[i].shape()[0];
    const int64_t kept = std::min(len, maxlen);
    if (kept == 0) continue;
    Tensor s = sequences[i].dtype() == options.dtype ? sequences[i] : sequences[i].cast(options.dtype);
    if (!s.device_ref().host_memory()) s = s.to(data::detail::host());
    const int64_t from = options.truncating == "pre" ? len - kept : 0;  // the steps kept: [from, from + kept)
    const int64_t to = options.padding == "pre" ? maxlen - kept : 0;    // where they go in the row
    std::memcpy(base + i * row_bytes + static_cast<std::size_t>(to * step) * width,
                static_cast<const unsigned char*>(s.raw_data()) + static_cast<std::size_t>(from * step) * width,
                static_cast<std::size_t>(kept * step) * width);
  }
  return out;
}

Tensor pad_sequences(const std::vector<std::vector<int64_t>>& sequences, const PadSequencesOptions& options) {
  check_options(options);
  std::vector<Tensor> tensors;
  tensors.reserve(sequences.size());
  for (std::size_t i = 0; i < sequences.size(); ++i) {
    const auto& s = sequences[i];
    if (options.dtype == DType::int32) {
      for (std::size_t k = 0; k < s.size(); ++k) {
        if (s[k] < std::numeric_limits<int32_t>::min() || s[k] > std::numeric_limits<int32_t>::max()) {
          throw ValueError(fmt::format("pad_sequences: sequence {} holds {} at position {}, outside int32's range "
                                       "(pass dtype=int64)",
                                       i, s[k], k));
        }
      }
    }
    tensors.push_back(
        Tensor::from_host(s.data(), Shape({static_cast<int64_t>(s.size())})).to(data::detail::host()));
  }
  return pad_sequences(tensors, options);
}

}  // namespace osprey::keras::utils
