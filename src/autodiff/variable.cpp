#include <cstring>

#include "osprey/variable.h"

#include <fmt/format.h>

#include "osprey/errors.h"
#include "tensor/tensor_impl.h"

namespace osprey {

Variable::Variable(const Tensor& initial_value, std::string name, bool trainable)
    : name_(std::move(name)), path_(name_), trainable_(trainable) {
  value_ = initial_value.to(runtime::current_device());
  value_.impl()->trainable_variable = trainable;
}

void Variable::assign(const Tensor& value) {
  if (value.shape() != value_.shape() || value.dtype() != value_.dtype()) {
    throw InvalidArgumentError(fmt::format("Cannot assign a value of shape {} and dtype {} to variable '{}' of shape {} "
                                           "and dtype {}",
                                           value.shape().to_string(), dtype_name(value.dtype()), path_,
                                           value_.shape().to_string(), dtype_name(value_.dtype())));
  }
  Tensor src = value.to(value_.device_ref());
  auto& d = value_.device_ref();
  if (d.host_memory()) {
    std::memcpy(value_.raw_data(), src.raw_data(), static_cast<std::size_t>(value_.nbytes()));
  } else {
    d.platform().copy(d, value_.impl()->data(), true, src.impl()->data(), true, static_cast<std::size_t>(value_.nbytes()));
  }
}

}  // namespace osprey
