// cuBLASLt, loaded with dlopen when the first logical GPU is created: the plug-in itself stays small, so that
// loading it on a machine without a GPU (to learn why there is none) costs about a millisecond, not the ~70 ms of
// mapping cuBLASLt.
#pragma once

#include <cublasLt.h>

namespace osprey::cuda {

struct LtApi {
  decltype(&cublasLtCreate) create = nullptr;
  decltype(&cublasLtDestroy) destroy = nullptr;
  decltype(&cublasLtMatmul) matmul = nullptr;
  decltype(&cublasLtMatmulAlgoGetHeuristic) heuristic = nullptr;
  decltype(&cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&cublasLtMatmulDescSetAttribute) desc_set = nullptr;
  decltype(&cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&cublasLtMatmulPreferenceSetAttribute) pref_set = nullptr;
  decltype(&cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
  decltype(&cublasLtMatrixLayoutSetAttribute) layout_set = nullptr;
};

/// The loaded API; throws InternalError naming the library and the loader's message when it cannot be loaded.
const LtApi& lt_api();

}  // namespace osprey::cuda
