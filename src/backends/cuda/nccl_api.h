// The few NCCL declarations the CUDA plug-in uses, as NCCL 2's nccl.h spells them: the library is opened with
// dlopen when a collective is first needed, and not every CUDA toolkit ships nccl.h, so the plug-in builds
// wherever nvcc does. Values and signatures are NCCL's ABI (checked against nccl.h where it exists:
// tests/cuda/test_distribute_gpu.cpp).
#pragma once

#include <cstddef>

#include <cuda_runtime.h>

struct ncclComm;  // NCCL's opaque communicator, as nccl.h declares it

namespace osprey::cuda::nccl {

using Comm = ::ncclComm*;  // ncclComm_t
enum Result : int { kSuccess = 0 };  // ncclResult_t (other values are errors, named by GetErrorString)
enum DataType : int { kFloat32 = 7 };  // ncclDataType_t
enum RedOp : int { kSum = 0 };  // ncclRedOp_t

using GetVersionFn = Result (*)(int* version);
using CommInitAllFn = Result (*)(Comm* comms, int ndev, const int* devlist);
using AllReduceFn = Result (*)(const void* sendbuff, void* recvbuff, std::size_t count, DataType datatype, RedOp op,
                               Comm comm, cudaStream_t stream);
using GroupFn = Result (*)();
using GetErrorStringFn = const char* (*)(Result result);

}  // namespace osprey::cuda::nccl
