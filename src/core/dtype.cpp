#include "osprey/dtype.h"

#include "osprey/errors.h"

namespace osprey {

std::size_t dtype_size(DType dtype) {
  switch (dtype) {
    case DType::float32: return 4;
    case DType::float64: return 8;
    case DType::int32: return 4;
    case DType::int64: return 8;
    case DType::bool_: return 1;
    case DType::float16:
    case DType::bfloat16: return 2;
  }
  throw InternalError("dtype_size: unknown dtype");
}

std::string dtype_name(DType dtype) {
  switch (dtype) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int32: return "int32";
    case DType::int64: return "int64";
    case DType::bool_: return "bool";
    case DType::float16: return "float16";
    case DType::bfloat16: return "bfloat16";
  }
  throw InternalError("dtype_name: unknown dtype");
}

DType dtype_from_name(const std::string& name) {
  if (name == "float32") return DType::float32;
  if (name == "float64") return DType::float64;
  if (name == "int32") return DType::int32;
  if (name == "int64") return DType::int64;
  if (name == "bool") return DType::bool_;
  if (name == "float16") return DType::float16;
  if (name == "bfloat16") return DType::bfloat16;
  throw ValueError("Unknown dtype '" + name + "'. Supported: float32, float64, int32, int64, bool, float16, bfloat16.");
}

}  // namespace osprey
