// cuDNN's convolution API (the v7-style descriptors and calls cuDNN 9 keeps in libcudnn.so.9) and its RNN API (the
// v8 calls, cudnn_adv.h), declared here and loaded with dlopen on first use: the plug-in builds without cudnn.h (the lent GPU machine may have cuDNN's
// library from a Python wheel and not its headers) and loads where cuDNN is absent (convolutions then fail with a
// clear error; everything else runs). Where the toolkit has cudnn.h, the declarations are checked against it.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

namespace osprey::cuda::cudnn {

using Handle = struct cudnnContext*;
using TensorDesc = struct cudnnTensorStruct*;
using FilterDesc = struct cudnnFilterStruct*;
using ConvDesc = struct cudnnConvolutionStruct*;
using RnnDesc = struct cudnnRNNStruct*;
using RnnDataDesc = struct cudnnRNNDataStruct*;
using DropoutDesc = struct cudnnDropoutStruct*;
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
inline constexpr int kRnnAlgoStandard = 0;      // CUDNN_RNN_ALGO_STANDARD
inline constexpr int kRnnRelu = 0, kRnnTanh = 1, kLstm = 2, kGru = 3;  // cudnnRNNMode_t
inline constexpr int kRnnDoubleBias = 2;        // CUDNN_RNN_DOUBLE_BIAS
inline constexpr int kUnidirectional = 0;       // CUDNN_UNIDIRECTIONAL
inline constexpr int kLinearInput = 0;          // CUDNN_LINEAR_INPUT
inline constexpr int kSeqMajorUnpacked = 0;     // CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED
inline constexpr unsigned kPaddedIoEnabled = 1; // CUDNN_RNN_PADDED_IO_ENABLED
inline constexpr int kFwdModeTraining = 1;      // CUDNN_FWD_MODE_TRAINING
inline constexpr int kWgradModeAdd = 0;         // CUDNN_WGRAD_MODE_ADD

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
  Status (*get_tensor)(TensorDesc, int requested, int* data_type, int* nb_dims, int dims[], int strides[]) = nullptr;
  // RNNs (cudnn_adv.h).
  Status (*create_dropout)(DropoutDesc*) = nullptr;
  Status (*set_dropout)(DropoutDesc, Handle, float dropout, void* states, std::size_t state_bytes,
                        unsigned long long seed) = nullptr;
  Status (*create_rnn)(RnnDesc*) = nullptr;
  Status (*set_rnn)(RnnDesc, int algo, int cell_mode, int bias_mode, int dir_mode, int input_mode, int data_type,
                    int math_prec, int math_type, int32_t input_size, int32_t hidden_size, int32_t proj_size,
                    int32_t num_layers, DropoutDesc, uint32_t aux_flags) = nullptr;
  Status (*create_rnn_data)(RnnDataDesc*) = nullptr;
  Status (*set_rnn_data)(RnnDataDesc, int data_type, int layout, int max_seq_length, int batch_size, int vector_size,
                         const int seq_lengths[], void* padding_fill) = nullptr;
  Status (*rnn_weight_space_size)(Handle, RnnDesc, std::size_t*) = nullptr;
  Status (*rnn_temp_space_sizes)(Handle, RnnDesc, int fwd_mode, RnnDataDesc, std::size_t* work,
                                 std::size_t* reserve) = nullptr;
  Status (*rnn_weight_params)(Handle, RnnDesc, int32_t pseudo_layer, std::size_t weight_space_bytes,
                              const void* weight_space, int32_t lin_layer_id, TensorDesc m_desc, void** m_addr,
                              TensorDesc b_desc, void** b_addr) = nullptr;
  Status (*rnn_forward)(Handle, RnnDesc, int fwd_mode, const int32_t dev_seq_lengths[], RnnDataDesc, const void* x,
                        RnnDataDesc, void* y, TensorDesc h_desc, const void* hx, void* hy, TensorDesc c_desc,
                        const void* cx, void* cy, std::size_t weight_bytes, const void* weights,
                        std::size_t work_bytes, void* work, std::size_t reserve_bytes, void* reserve) = nullptr;
  Status (*rnn_backward_data)(Handle, RnnDesc, const int32_t dev_seq_lengths[], RnnDataDesc, const void* y,
                              const void* dy, RnnDataDesc, void* dx, TensorDesc h_desc, const void* hx,
                              const void* dhy, void* dhx, TensorDesc c_desc, const void* cx, const void* dcy,
                              void* dcx, std::size_t weight_bytes, const void* weights, std::size_t work_bytes,
                              void* work, std::size_t reserve_bytes, void* reserve) = nullptr;
  Status (*rnn_backward_weights)(Handle, RnnDesc, int add_grad, const int32_t dev_seq_lengths[], RnnDataDesc,
                                 const void* x, TensorDesc h_desc, const void* hx, RnnDataDesc, const void* y,
                                 std::size_t weight_bytes, void* dweights, std::size_t work_bytes, void* work,
                                 std::size_t reserve_bytes, void* reserve) = nullptr;
};

/// The loaded API; throws InternalError naming the library, the loader's message and what to do when cuDNN cannot
/// be loaded (OSPREY_CUDNN_LIBRARY names the library file to use instead of libcudnn.so.9).
const Api& api();
/// Throws InternalError naming the call and cuDNN's message when `status` is not success.
void check(Status status, const char* what);

}  // namespace osprey::cuda::cudnn

namespace osprey::cuda {
class CudaDevice;
namespace cudnn {
/// A cuDNN handle for the calling thread and `dev`, bound to the device's stream (created on first use).
Handle handle_for(CudaDevice& dev);
}  // namespace cudnn
}  // namespace osprey::cuda
