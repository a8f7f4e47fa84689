// data::Element, tf.data's nested structure of tensors, and the element helpers the pipeline shares: stacking rows
// into batches, padding, slicing, and errors that keep their class when context is added.
#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/half.h"
#include "data/pipeline.h"
#include "osprey/errors.h"

namespace osprey::data {

Element Element::tuple(std::vector<Element> items) {
  Element e;
  e.items_ = std::move(items);
  return e;
}

Element Element::named(std::map<std::string, Element> items) {
  Element e;
  e.kind_ = Kind::map;
  auto keys = std::make_shared<std::vector<std::string>>();
  for (auto& [k, v] : items) {
    keys->push_back(k);
    e.items_.push_back(std::move(v));
  }
  e.keys_ = std::move(keys);
  return e;
}

const std::vector<std::string>& Element::keys() const {
  static const std::vector<std::string> none;
  return keys_ ? *keys_ : none;
}

bool Element::same_structure(const Element& other) const {
  if (kind_ != other.kind_ || items_.size() != other.items_.size()) return false;
  if (kind_ == Kind::map && keys_ != other.keys_ && *keys_ != *other.keys_) return false;
  for (std::size_t i = 0; i < items_.size(); ++i) {
    if (!items_[i].same_structure(other.items_[i])) return false;
  }
  return true;
}

const Tensor& Element::tensor() const {
  if (kind_ != Kind::tensor) {
    throw ValueError(fmt::format("Element::tensor(): this element is {}, not a tensor; index it first", structure()));
  }
  return tensor_;
}

const Element& Element::operator[](int64_t i) const {
  if (kind_ == Kind::tensor || i < 0 || i >= size()) {
    throw ValueError(fmt::format("Element[{}]: out of range for an element of structure {}", i, structure()));
  }
  return items_[static_cast<std::size_t>(i)];
}

const Element& Element::operator[](const std::string& key) const {
  if (kind_ == Kind::map) {
    const auto& keys = *keys_;
    auto it = std::lower_bound(keys.begin(), keys.end(), key);
    if (it != keys.end() && *it == key) return items_[static_cast<std::size_t>(it - keys.begin())];
  }
  throw ValueError(fmt::format("Element[\"{}\"]: no such key in an element of structure {}", key, structure()));
}

void Element::flatten_into(std::vector<Tensor>& out) const {
  if (kind_ == Kind::tensor) {
    out.push_back(tensor_);
    return;
  }
  for (const auto& item : items_) item.flatten_into(out);
}

std::vector<Tensor> Element::flatten() const {
  std::vector<Tensor> out;
  flatten_into(out);
  return out;
}

Element Element::with_tensors_from(const std::vector<Tensor>& flat, std::size_t& at) const {
  if (kind_ == Kind::tensor) {
    if (at >= flat.size()) throw InternalError("Element::with_tensors: too few tensors");
    return Element(flat[at++]);
  }
  Element e;
  e.kind_ = kind_;
  e.keys_ = keys_;
  e.items_.reserve(items_.size());
  for (const auto& item : items_) e.items_.push_back(item.with_tensors_from(flat, at));
  return e;
}

Element Element::with_tensors(const std::vector<Tensor>& flat) const {
  std::size_t at = 0;
  Element e = with_tensors_from(flat, at);
  if (at != flat.size()) {
    throw ValueError(fmt::format("Element::with_tensors: {} tensors for a structure of {} ({})", flat.size(), at,
                                 structure()));
  }
  return e;
}

std::string detail::dims_text(const Shape& s) {
  std::string out = "[";
  for (int i = 0; i < s.rank(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

namespace {
std::string describe(const Element& e, bool specs) {
  switch (e.kind()) {
    case Element::Kind::tensor: {
      if (!specs) return "tensor";
      const Tensor& t = e.tensor();
      if (!t.defined()) return "undefined";
      return dtype_name(t.dtype()) + detail::dims_text(t.shape());
    }
    case Element::Kind::tuple: {
      std::string s = "(";
      for (int64_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + describe(e[i], specs);
      if (e.size() == 1) s += ",";
      return s + ")";
    }
    case Element::Kind::map: {
      std::string s = "{";
      for (int64_t i = 0; i < e.size(); ++i) {
        s += (i ? ", " : "") + e.keys()[static_cast<std::size_t>(i)] + ": " + describe(e.items()[i], specs);
      }
      return s + "}";
    }
  }
  return "?";
}
}  // namespace

std::string Element::spec() const { return describe(*this, true); }
std::string Element::structure() const { return describe(*this, false); }

}  // namespace osprey::data

namespace osprey::data::detail {

runtime::Device& host() { return runtime::DeviceManager::get().host_device(); }

Tensor on_host(const Tensor& t) {
  if (!t.defined()) throw ValueError("data: an element holds an undefined (default-constructed) tensor");
  return &t.device_ref() == &host() ? t : t.to(host());
}

Tensor row_of(const Tensor& t, int64_t i) {
  const Shape& s = t.shape();
  std::vector<int64_t> dims(s.dims().begin() + 1, s.dims().end());
  return t.slice_rows(i, i + 1).reshape(Shape(dims));
}

void check_same_structure(const Element& first, const Element& e, int64_t index, const char* what) {
  if (!first.same_structure(e)) {
    throw InvalidArgumentError(fmt::format("{}: element {} has the structure {}, but the first element has {}", what,
                                           index, e.structure(), first.structure()));
  }
}

Element stack(const std::vector<Element>& rows, int64_t first_index) {
  const auto& first = rows.front();
  std::vector<std::vector<Tensor>> flat(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    check_same_structure(first, rows[r], first_index + static_cast<int64_t>(r), "batch");
    flat[r] = rows[r].flatten();
  }
  std::vector<Tensor> out;
  for (std::size_t c = 0; c < flat[0].size(); ++c) {
    const Tensor t0 = on_host(flat[0][c]);
    for (std::size_t r = 1; r < rows.size(); ++r) {
      const Tensor& t = flat[r][c];
      if (t.shape() != t0.shape()) {
        throw InvalidArgumentError(fmt::format(
            "Cannot batch tensors with different shapes in component {}. First element had shape {} and element {} "
            "had shape {}. Use padded_batch() for elements of different shapes.",
            c, dims_text(t0.shape()), r, dims_text(t.shape())));
      }
      if (t.dtype() != t0.dtype()) {
        throw InvalidArgumentError(fmt::format("Cannot batch tensors of different dtypes in component {}: {} in the "
                                               "first element and {} in element {}",
                                               c, dtype_name(t0.dtype()), dtype_name(t.dtype()), r));
      }
    }
    std::vector<int64_t> dims{static_cast<int64_t>(rows.size())};
    for (int64_t d : t0.shape().dims()) dims.push_back(d);
    Tensor batch = Tensor::empty(Shape(dims), t0.dtype(), &host());
    const auto bytes = static_cast<std::size_t>(t0.nbytes());
    auto* dst = static_cast<char*>(batch.raw_data());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      if (bytes) std::memcpy(dst + r * bytes, on_host(flat[r][c]).raw_data(), bytes);
    }
    out.push_back(std::move(batch));
  }
  return first.with_tensors(out);
}

namespace {
// Copies src (shape `from`) into dst (shape `to`, each dimension at least from's), element size `size`.
void pad_copy(const char* src, const std::vector<int64_t>& from, char* dst, const std::vector<int64_t>& to,
              std::size_t size, int dim, int64_t src_at, int64_t dst_at) {
  const int rank = static_cast<int>(from.size());
  if (rank == 0) {
    std::memcpy(dst, src, size);
    return;
  }
  int64_t src_stride = 1, dst_stride = 1;
  for (int d = dim + 1; d < rank; ++d) {
    src_stride *= from[static_cast<std::size_t>(d)];
    dst_stride *= to[static_cast<std::size_t>(d)];
  }
  if (dim == rank - 1) {
    std::memcpy(dst + static_cast<std::size_t>(dst_at) * size, src + static_cast<std::size_t>(src_at) * size,
                static_cast<std::size_t>(from[static_cast<std::size_t>(dim)]) * size);
    return;
  }
  for (int64_t i = 0; i < from[static_cast<std::size_t>(dim)]; ++i) {
    pad_copy(src, from, dst, to, size, dim + 1, src_at + i * src_stride, dst_at + i * dst_stride);
  }
}

void fill_value(Tensor& t, double v) {
  const int64_t n = t.num_elements();
  switch (t.dtype()) {
    case DType::float32: std::fill_n(t.data<float>(), n, static_cast<float>(v)); break;
    case DType::float64: std::fill_n(t.data<double>(), n, v); break;
    case DType::int32: std::fill_n(t.data<int32_t>(), n, static_cast<int32_t>(v)); break;
    case DType::int64: std::fill_n(t.data<int64_t>(), n, static_cast<int64_t>(v)); break;
    case DType::bool_: std::fill_n(t.data<bool>(), n, v != 0.0); break;
    case DType::float16:
      std::fill_n(static_cast<uint16_t*>(t.raw_data()), n, float_to_half(static_cast<float>(v)));
      break;
    case DType::bfloat16:
      std::fill_n(static_cast<uint16_t*>(t.raw_data()), n, float_to_bf16(static_cast<float>(v)));
      break;
  }
}
}  // namespace

Element pad_stack(const std::vector<Element>& rows, const PaddedBatchOptions& o, int64_t first_index) {
  const auto& first = rows.front();
  std::vector<std::vector<Tensor>> flat;
  for (std::size_t r = 0; r < rows.size(); ++r) {
    check_same_structure(first, rows[r], first_index + static_cast<int64_t>(r), "padded_batch");
    flat.push_back(rows[r].flatten());
  }
  const std::size_t comps = flat[0].size();
  if (!o.padded_shapes.empty() && o.padded_shapes.size() != comps) {
    throw ValueError(fmt::format("padded_batch: padded_shapes has {} entries for elements of {} components ({})",
                                 o.padded_shapes.size(), comps, first.spec()));
  }
  if (!o.padding_values.empty() && o.padding_values.size() != comps) {
    throw ValueError(fmt::format("padded_batch: padding_values has {} entries for elements of {} components ({})",
                                 o.padding_values.size(), comps, first.spec()));
  }
  std::vector<Tensor> out;
  for (std::size_t c = 0; c < comps; ++c) {
    const Tensor& t0 = flat[0][c];
    const int rank = t0.shape().rank();
    std::vector<int64_t> to(static_cast<std::size_t>(rank), 0);
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const Tensor& t = flat[r][c];
      if (t.shape().rank() != rank || t.dtype() != t0.dtype()) {
        throw InvalidArgumentError(fmt::format("padded_batch: component {} is {}{} in the first element and {}{} in "
                                               "element {}; padding needs the same rank and dtype",
                                               c, dtype_name(t0.dtype()), dims_text(t0.shape()),
                                               dtype_name(t.dtype()), dims_text(t.shape()), r));
      }
      for (int d = 0; d < rank; ++d) to[static_cast<std::size_t>(d)] = std::max(to[static_cast<std::size_t>(d)], t.shape()[d]);
    }
    if (!o.padded_shapes.empty()) {
      const auto& want = o.padded_shapes[c];
      if (static_cast<int>(want.size()) != rank) {
        throw ValueError(fmt::format("padded_batch: padded_shapes[{}] has rank {} for a component of shape {}", c,
                                     want.size(), t0.shape().to_string()));
      }
      for (int d = 0; d < rank; ++d) {
        const int64_t w = want[static_cast<std::size_t>(d)];
        if (w < -1) throw ValueError(fmt::format("padded_batch: padded_shapes[{}][{}] = {}; use -1 for the longest", c, d, w));
        if (w == -1) continue;
        if (to[static_cast<std::size_t>(d)] > w) {
          throw InvalidArgumentError(fmt::format(
              "Attempted to pad to a smaller size than the input element: component {} dimension {} is {} in this "
              "batch, padded_shapes asks for {}",
              c, d, to[static_cast<std::size_t>(d)], w));
        }
        to[static_cast<std::size_t>(d)] = w;
      }
    }
    std::vector<int64_t> dims{static_cast<int64_t>(rows.size())};
    dims.insert(dims.end(), to.begin(), to.end());
    Tensor batch = Tensor::empty(Shape(dims), t0.dtype(), &host());
    fill_value(batch, o.padding_values.empty() ? o.padding_value : o.padding_values[c]);
    const std::size_t size = dtype_size(t0.dtype());
    int64_t per_row = 1;
    for (int64_t d : to) per_row *= d;
    auto* dst = static_cast<char*>(batch.raw_data());
    for (std::size_t r = 0; r < rows.size(); ++r) {
      const Tensor t = on_host(flat[r][c]);
      if (t.num_elements() == 0) continue;
      pad_copy(static_cast<const char*>(t.raw_data()), t.shape().dims_vector(),
               dst + static_cast<std::size_t>(per_row) * size * r, to, size, 0, 0, 0);
    }
    out.push_back(std::move(batch));
  }
  return first.with_tensors(out);
}

[[noreturn]] void rethrow_with_context(std::exception_ptr error, const std::string& prefix) {
  try {
    std::rethrow_exception(error);
  } catch (const ValueError& e) {
    throw ValueError(prefix + e.what());
  } catch (const InvalidArgumentError& e) {
    throw InvalidArgumentError(prefix + e.what());
  } catch (const NotFoundError& e) {
    throw NotFoundError(prefix + e.what());
  } catch (const FailedPreconditionError& e) {
    throw FailedPreconditionError(prefix + e.what());
  } catch (const ResourceExhaustedError& e) {
    throw ResourceExhaustedError(prefix + e.what());
  } catch (const PermissionDeniedError& e) {
    throw PermissionDeniedError(prefix + e.what());
  } catch (const NotImplementedError& e) {
    throw NotImplementedError(prefix + e.what());
  } catch (const RuntimeError& e) {
    throw RuntimeError(prefix + e.what());
  } catch (const UnavailableError& e) {
    throw UnavailableError(prefix + e.what());
  } catch (const AbortedError& e) {
    throw AbortedError(prefix + e.what());
  } catch (const DeadlineExceededError& e) {
    throw DeadlineExceededError(prefix + e.what());
  } catch (const InternalError& e) {
    throw InternalError(prefix + e.what());
  } catch (const std::exception& e) {
    throw InvalidArgumentError(prefix + e.what());
  } catch (...) {
    throw InvalidArgumentError(prefix + "an exception that is not a std::exception");
  }
}

}  // namespace osprey::data::detail
