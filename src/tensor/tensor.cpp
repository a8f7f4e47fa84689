#include "osprey/tensor.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>
#include <type_traits>

#include <fmt/format.h>

#include "core/half.h"
#include "osprey/errors.h"
#include "osprey/ops.h"
#include "runtime/device_scope_state.h"
#include "runtime/placement.h"
#include "runtime/executing_device.h"
#include "tensor/tensor_impl.h"

namespace osprey {

namespace runtime {
Device& current_device() {
  static const auto all = [](DeviceType) { return true; };
  return select_device(current_device_spec(), nullptr, all, "_Alloc");
}
}  // namespace runtime

static std::string tf_type_name(DType t) {
  switch (t) {
    case DType::float32: return "float";
    case DType::float64: return "double";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::bool_: return "bool";
    case DType::float16: return "half";
    case DType::bfloat16: return "bfloat16";
  }
  return "?";
}

static std::string tf_shape(const Shape& s) {
  std::string out = "shape[";
  for (int i = 0; i < s.rank(); ++i) out += (i ? "," : "") + std::to_string(s.dims()[i]);
  return out + "]";
}

Tensor Tensor::empty(const Shape& shape, DType dtype, runtime::Device* device) {
  runtime::Device& d = device ? *device : runtime::current_device();
  auto impl = std::make_shared<TensorImpl>();
  std::size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<std::size_t>(shape.num_elements()), dtype_size(dtype), &bytes)) {
    throw ResourceExhaustedError(fmt::format("OOM when allocating tensor with {} and type {} on {}: more bytes than "
                                             "an address space holds",
                                             tf_shape(shape), tf_type_name(dtype), d.full_name()));
  }
  try {
    impl->storage = std::make_shared<Storage>(d, bytes);
  } catch (const ResourceExhaustedError& e) {
    throw ResourceExhaustedError(fmt::format(
        "OOM when allocating tensor with {} and type {} on {} by allocator {}. {}. Hint: enable memory growth "
        "(config::experimental::set_memory_growth), raise the device's memory_limit, or use a smaller batch size.",
        tf_shape(shape), tf_type_name(dtype), d.full_name(), d.allocator().name(), e.what()));
  }
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

// Writes host values into a fresh tensor on the current device.
static Tensor upload(const void* host, const Shape& shape, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  auto& d = t.device_ref();
  if (t.nbytes() == 0) return t;
  if (d.host_memory()) {
    std::memcpy(t.raw_data(), host, t.nbytes());
  } else {
    d.platform().copy(d, t.impl()->data(), true, host, false, t.nbytes());
  }
  return t;
}

// A fresh tensor of `value`: allocated first (a size that cannot be had is the allocator's ResourceExhaustedError),
// then filled in place on the host, or from a bounded host chunk on a device.
template <typename T>
static Tensor filled(const Shape& shape, double value, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  const T v = static_cast<T>(value);
  const auto n = static_cast<std::size_t>(shape.num_elements());
  auto& d = t.device_ref();
  if (d.host_memory()) {
    std::fill_n(static_cast<T*>(t.raw_data()), n, v);
    return t;
  }
  constexpr std::size_t kChunk = std::size_t{1} << 16;
  const std::vector<T> chunk(std::min(n, kChunk), v);
  for (std::size_t off = 0; off < n; off += kChunk) {
    const std::size_t m = std::min(kChunk, n - off);
    d.platform().copy(d, static_cast<char*>(t.impl()->data()) + off * sizeof(T), true, chunk.data(), false, m * sizeof(T));
  }
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  switch (dtype) {
    case DType::float32: return filled<float>(shape, value, dtype);
    case DType::float64: return filled<double>(shape, value, dtype);
    case DType::int32: return filled<int32_t>(shape, value, dtype);
    case DType::int64: return filled<int64_t>(shape, value, dtype);
    case DType::bool_: return filled<uint8_t>(shape, value != 0.0 ? 1.0 : 0.0, dtype);  // bool bytes: 0 or 1
    case DType::float16: return filled<uint16_t>(shape, float_to_half(static_cast<float>(value)), dtype);
    case DType::bfloat16: return filled<uint16_t>(shape, float_to_bf16(static_cast<float>(value)), dtype);
  }
  throw InternalError("full: unknown dtype");
}
Tensor Tensor::zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor Tensor::scalar(double value, DType dtype) { return full(Shape{}, value, dtype); }

Tensor Tensor::from_host(const float* data, const Shape& shape) { return upload(data, shape, DType::float32); }
Tensor Tensor::from_host(const double* data, const Shape& shape) { return upload(data, shape, DType::float64); }
Tensor Tensor::from_host(const int32_t* data, const Shape& shape) { return upload(data, shape, DType::int32); }
Tensor Tensor::from_host(const int64_t* data, const Shape& shape) { return upload(data, shape, DType::int64); }
Tensor Tensor::from_host(const bool* data, const Shape& shape) { return upload(data, shape, DType::bool_); }

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& data, const Shape& shape) {
  if (static_cast<int64_t>(data.size()) != shape.num_elements()) {
    throw InvalidArgumentError(fmt::format("from_vector: {} values cannot fill shape {} ({} elements)", data.size(),
                                           shape.to_string(), shape.num_elements()));
  }
  if constexpr (std::is_same_v<T, bool>) {
    const std::unique_ptr<bool[]> bytes(new bool[data.size()]);  // std::vector<bool> packs bits
    std::copy(data.begin(), data.end(), bytes.get());
    return from_host(bytes.get(), shape);
  } else {
    return from_host(data.data(), shape);
  }
}
template Tensor Tensor::from_vector(const std::vector<float>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<double>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int32_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<int64_t>&, const Shape&);
template Tensor Tensor::from_vector(const std::vector<bool>&, const Shape&);

static const TensorImpl& checked(const std::shared_ptr<TensorImpl>& impl) {
  if (!impl) throw FailedPreconditionError("Use of an undefined Tensor (default-constructed); assign a value first.");
  return *impl;
}

const Shape& Tensor::shape() const { return checked(impl_).shape; }
DType Tensor::dtype() const { return checked(impl_).dtype; }
int64_t Tensor::nbytes() const { return num_elements() * static_cast<int64_t>(dtype_size(dtype())); }
runtime::Device& Tensor::device_ref() const { return checked(impl_).device(); }
LogicalDevice Tensor::device() const {
  auto& d = device_ref();
  return {d.name(), runtime::device_type_name(d.type())};
}
void* Tensor::raw_data() const {
  const auto& impl = checked(impl_);
  if (!impl.device().host_memory() && &impl.device() != runtime::executing_device()) {
    throw FailedPreconditionError("Tensor on " + impl.device().name() +
                                  " is not in host memory; copy it with .to(\"CPU:0\") or .to_vector() first.");
  }
  return impl.data();
}

template <typename T>
T* Tensor::data() const {
  if (dtype() != dtype_of<T>()) {
    throw InvalidArgumentError("Tensor has dtype " + dtype_name(dtype()) + ", not " + dtype_name(dtype_of<T>()));
  }
  return static_cast<T*>(raw_data());
}
template float* Tensor::data<float>() const;
template double* Tensor::data<double>() const;
template int32_t* Tensor::data<int32_t>() const;
template int64_t* Tensor::data<int64_t>() const;
template bool* Tensor::data<bool>() const;

// Copies raw bytes between any two devices (staging through the host when neither side is host memory).
static thread_local uint64_t t_copies = 0;
uint64_t tensor_copies_on_this_thread() { return t_copies; }

static void copy_bytes(const TensorImpl& src, TensorImpl& dst, std::size_t bytes) {
  ++t_copies;
  if (bytes == 0) return;
  auto& sd = src.device();
  auto& dd = dst.device();
  if (sd.host_memory() && dd.host_memory()) {
    std::memcpy(dst.data(), src.data(), bytes);
  } else if (sd.host_memory()) {
    dd.platform().copy(dd, dst.data(), true, src.data(), false, bytes);
  } else if (dd.host_memory()) {
    sd.platform().copy(sd, dst.data(), false, src.data(), true, bytes);
  } else if (&sd == &dd) {
    dd.platform().copy(dd, dst.data(), true, src.data(), true, bytes);
  } else if (&sd.platform() == &dd.platform()) {  // ordered after the source's writes, before its free
    dd.platform().copy_between(sd, dd, dst.data(), src.data(), bytes);
  } else {
    std::vector<char> staging(bytes);
    sd.platform().copy(sd, staging.data(), false, src.data(), true, bytes);
    dd.platform().copy(dd, dst.data(), true, staging.data(), false, bytes);
  }
}

Tensor Tensor::to(runtime::Device& device) const {
  Tensor out = empty(shape(), dtype(), &device);
  copy_bytes(*impl_, *out.impl_, static_cast<std::size_t>(nbytes()));
  return out;
}

Tensor Tensor::to(const std::string& device) const {
  DeviceSpec spec = DeviceSpec::from_string(device);
  static const auto all = [](runtime::DeviceType) { return true; };
  return to(runtime::select_device(spec, nullptr, all, "_Copy"));
}

Tensor Tensor::clone() const { return to(device_ref()); }

Tensor Tensor::cast(DType dtype) const { return ops::cast(*this, dtype); }

Tensor Tensor::slice_rows(int64_t begin, int64_t end) const {
  const auto& s = shape();
  if (s.rank() == 0 || begin < 0 || end < begin || end > s[0]) {
    throw InvalidArgumentError(fmt::format("slice_rows({}, {}) out of range for shape {}", begin, end, s.to_string()));
  }
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->trainable_variable = false;
  const int64_t row = s.num_elements() / std::max<int64_t>(s[0], 1) * static_cast<int64_t>(dtype_size(dtype()));
  impl->offset += static_cast<std::size_t>(begin * row);
  impl->shape = s.with_dim(0, end - begin);
  return Tensor(std::move(impl));
}

Tensor Tensor::operator[](int64_t i) const {
  const auto& s = shape();
  if (s.rank() == 0) throw InvalidArgumentError("Indexing a scalar tensor (shape ()); it has no axis to index");
  const int64_t at = i < 0 ? i + s[0] : i;
  if (at < 0 || at >= s[0]) {
    throw InvalidArgumentError(fmt::format("index {} is out of bounds for axis 0 with size {}", i, s[0]));
  }
  const auto& dims = s.dims();
  return ops::reshape(ops::slice_axis(*this, 0, at, 1), Shape(dims.subspan(1)));
}

Tensor Tensor::slice(const std::vector<int64_t>& begin, const std::vector<int64_t>& size) const {
  const auto& s = shape();
  if (static_cast<int>(begin.size()) != s.rank() || static_cast<int>(size.size()) != s.rank()) {
    throw InvalidArgumentError(fmt::format("slice: {} begin and {} size entries for shape {} (one per axis)",
                                           begin.size(), size.size(), s.to_string()));
  }
  Tensor out = *this;
  for (int i = 0; i < s.rank(); ++i) {
    const auto u = static_cast<std::size_t>(i);
    const int64_t n = size[u] == -1 ? s[i] - begin[u] : size[u];
    if (begin[u] == 0 && n == s[i]) continue;
    out = ops::slice_axis(out, i, begin[u], n);
  }
  return out;
}

Tensor Tensor::reshape(const Shape& new_shape) const {
  if (new_shape.num_elements() != num_elements()) {
    throw InvalidArgumentError(fmt::format("Cannot reshape a tensor with {} elements to shape {} ({} elements)",
                                           num_elements(), new_shape.to_string(), new_shape.num_elements()));
  }
  auto impl = std::make_shared<TensorImpl>(*impl_);
  impl->trainable_variable = false;
  impl->shape = new_shape;
  return Tensor(std::move(impl));
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
  Tensor src = dtype() == dtype_of<T>() ? *this : cast(dtype_of<T>());
  std::vector<T> out(static_cast<std::size_t>(src.num_elements()));
  if (out.empty()) return out;
  const auto& impl = *src.impl_;
  if (impl.device().host_memory()) {
    std::memcpy(out.data(), impl.data(), out.size() * sizeof(T));
  } else {
    impl.device().platform().copy(impl.device(), out.data(), false, impl.data(), true, out.size() * sizeof(T));
  }
  return out;
}
template std::vector<float> Tensor::to_vector() const;
template std::vector<double> Tensor::to_vector() const;
template std::vector<int32_t> Tensor::to_vector() const;
template std::vector<int64_t> Tensor::to_vector() const;

double Tensor::item() const {
  if (num_elements() != 1) {
    throw InvalidArgumentError("item() needs a tensor with one element, got shape " + shape().to_string());
  }
  // Read in place on the host (a metric or a loss reads one every step); from a device, its bytes alone are
  // copied (no conversion op on the device).
  const auto& impl = *impl_;
  alignas(8) unsigned char bytes[8];
  const void* p = impl.data();
  if (!impl.device().host_memory()) {
    impl.device().platform().copy(impl.device(), bytes, false, impl.data(), true, dtype_size(dtype()));
    p = bytes;
  }
  switch (dtype()) {
    case DType::float32: return *static_cast<const float*>(p);
    case DType::float64: return *static_cast<const double*>(p);
    case DType::int32: return *static_cast<const int32_t*>(p);
    case DType::int64: return static_cast<double>(*static_cast<const int64_t*>(p));
    case DType::bool_: return *static_cast<const bool*>(p) ? 1.0 : 0.0;
    case DType::float16: return half_to_float(*static_cast<const uint16_t*>(p));
    case DType::bfloat16: return bf16_to_float(*static_cast<const uint16_t*>(p));
  }
  throw InternalError("item(): unknown dtype");
}

std::string Tensor::to_string() const {
  if (!defined()) return "Tensor(undefined)";
  std::ostringstream os;
  auto v = to_vector<double>();
  os << "Tensor(";
  const auto& dims = shape().dims();
  // Nested brackets, numpy style, eliding the middle of long axes.
  std::function<void(int, std::size_t)> rec = [&](int axis, std::size_t base) {
    if (axis == static_cast<int>(dims.size())) {
      os << v[base];
      return;
    }
    std::size_t stride = 1;
    for (std::size_t k = axis + 1; k < dims.size(); ++k) stride *= dims[k];
    os << "[";
    for (int64_t i = 0; i < dims[axis]; ++i) {
      if (dims[axis] > 6 && i == 3) {
        os << "...";
        i = dims[axis] - 3;
        os << ", ";
      }
      if (i && !(dims[axis] > 6 && i == dims[axis] - 3)) os << ", ";
      rec(axis + 1, base + static_cast<std::size_t>(i) * stride);
    }
    os << "]";
  };
  rec(0, 0);
  os << ", shape=" << shape().to_string() << ", dtype=" << dtype_name(dtype()) << ", device=" << device().name
     << ")";
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

}  // namespace osprey
