#include "backends/cpu/kernels.h"

namespace osprey::cpu {

void register_cpu_kernels() {
  register_math_kernels();
  register_nn_kernels();
  register_loss_kernels();
  register_optimizer_kernels();
  register_array_kernels();
  register_conv_kernels();
  register_image_kernels();
  register_attention_kernels();
  register_norm_kernels();
  register_toolkit_kernels();
  register_linalg_kernels();
  register_fft_kernels();
  register_ctc_kernels();
  register_rnn_kernels();
  register_rnn_sequence_kernels();
}

}  // namespace osprey::cpu
