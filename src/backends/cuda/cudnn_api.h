// cuDNN's convolution API (the v7-style descriptors and calls cuDNN 9 keeps in libcudnn.so.9), declared here and
// loaded with dlopen on first use: the plug-in builds without cudnn.h (the lent GPU machine may have cuDNN's
// library from a Python wheel and not its headers) and loads where cuDNN is absent (convolutions then fail with a
// clear error; everything else runs). Where the toolkit has cudnn.h, the declarations are checked against it.
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

namespace osprey::cuda::cudnn {

using Handle = struct cudnnContext*;
using TensorDesc = struct cudnnTensorStruct*;
using FilterDesc = struct cudnnFilterStruct*;
using ConvDesc = struct cudnnConvolutionStruct*;
using Status = int;
inline constexpr Status kSuccess = 0;
inline constexpr int kDataFloat = 0;            // CUDNN_DATA_FLOAT
inline constexpr int kDataHalf = 2;             // CUDNN_DATA_HALF
inline constexpr int kDataBfloat16 = 9;         // CUDNN_DATA_BFLOAT16
inline constexpr int kTensorNhwc = 1;           // CUDNN_TENSOR_NHWC (filters: K, spatial..., C)
inline constexpr int kCrossCorrelation = 1;     // CUDNN_CROSS_CORRELATION
inline constexpr int kDefaultMath = 0;          // CUDNN_DEFAULT_MATH: TF32 tensor cores allowed for float32
inline constexpr int kTensorOpMath = 1;         // CUDNN_TENSOR_OP_MATH: tensor cores for float16/bfloat16
inline constexpr int kFmaMath = 3;              // CUDNN_FMA_MATH: full float32
inline constexpr int kDeterministic = 1;        // CUDNN_DETERMINISTIC

/// cudnnConvolution{Fwd,BwdData,BwdFilter}AlgoPerf_t (one layout for the three).
struct AlgoPerf {
  int algo;
  Status status;
  float time;
  std::size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
};

struct Api {
  Status (*create)(Handle*) = nullptr;
  Status (*destroy)(Handle) = nullptr;
  Status (*set_stream)(Handle, cudaStream_t) = nullptr;
  const char* (*error_string)(Status) = nullptr;
  std::size_t (*get_version)() = nullptr;
  Status (*create_tensor)(TensorDesc*) = nullptr;
  Status (*set_tensor)(TensorDesc, int data_type, int nb_dims, const int dims[], const int strides[]) = nullptr;
  Status (*destroy_tensor)(TensorDesc) = nullptr;
  Status (*create_filter)(FilterDesc*) = nullptr;
  Status (*set_filter)(FilterDesc, int data_type, int format, int nb_dims, const int dims[]) = nullptr;
  Status (*destroy_filter)(FilterDesc) = nullptr;
  Status (*create_conv)(ConvDesc*) = nullptr;
  Status (*set_conv)(ConvDesc, int length, const int pad[], const int stride[], const int dilation[], int mode,
                     int compute_type) = nullptr;
  Status (*set_groups)(ConvDesc, int groups) = nullptr;
  Status (*set_math)(ConvDesc, int math_type) = nullptr;
  Status (*destroy_conv)(ConvDesc) = nullptr;
  Status (*forward_algos)(Handle, TensorDesc, FilterDesc, ConvDesc, TensorDesc, int, int*, AlgoPerf*) = nullptr;
  Status (*forward)(Handle, const void* alpha, TensorDesc, const void* x, FilterDesc, const void* w, ConvDesc,
                    int algo, void* workspace, std::size_t workspace_bytes, const void* beta, TensorDesc,
                    void* y) = nullptr;
  Status (*backward_data_algos)(Handle, FilterDesc, TensorDesc, ConvDesc, TensorDesc, int, int*, AlgoPerf*) = nullptr;
  Status (*backward_data)(Handle, const void* alpha, FilterDesc, const void* w, TensorDesc, const void* dy, ConvDesc,
                          int algo, void* workspace, std::size_t workspace_bytes, const void* beta, TensorDesc,
                          void* dx) = nullptr;
  Status (*backward_filter_algos)(Handle, TensorDesc, TensorDesc, ConvDesc, FilterDesc, int, int*,
                                  AlgoPerf*) = nullptr;
  Status (*backward_filter)(Handle, const void* alpha, TensorDesc, const void* x, TensorDesc, const void* dy, ConvDesc,
                            int algo, void* workspace, std::size_t workspace_bytes, const void* beta, FilterDesc,
                            void* dw) = nullptr;
};

/// The loaded API; throws InternalError naming the library, the loader's message and what to do when cuDNN cannot
/// be loaded (OSPREY_CUDNN_LIBRARY names the library file to use instead of libcudnn.so.9).
const Api& api();
/// Throws InternalError naming the call and cuDNN's message when `status` is not success.
void check(Status status, const char* what);

}  // namespace osprey::cuda::cudnn
