// Keras's audio preprocessing layers: keras.layers.STFTSpectrogram (a convolution with DFT kernels, trainable as
// Keras's) and keras.layers.MelSpectrogram (keras.ops.stft, a mel filter bank and dB scaling).
#pragma once

#include <optional>
#include <string>

#include "osprey/keras/layers/layer.h"

namespace osprey::keras::layers {

/// keras.layers.STFTSpectrogram's arguments.
struct STFTSpectrogramOptions {
  /// "log", "magnitude", "psd", "real", "imag", "angle" or "stft" (real and imaginary parts side by side).
  std::string mode = "log";
  int64_t frame_length = 256;
  std::optional<int64_t> frame_step{};   ///< default frame_length / 2
  std::optional<int64_t> fft_length{};   ///< default the power of two at or above frame_length
  /// A scipy.signal window name ("hann", "hamming", "blackman", ...), or none (std::nullopt: a rectangle without
  /// scaling).
  std::optional<std::string> window = "hann";
  bool periodic = false;  ///< scipy's fftbins: the periodic window instead of the symmetric one
  /// "density" (the window divided by its L2 norm), "spectrum" (by its L1 norm) or none.
  std::optional<std::string> scaling = "density";
  std::string padding = "valid";  ///< or "same"
  bool expand_dims = false;       ///< the frequencies on an axis of their own instead of beside the channels
  std::string data_format = "channels_last";
  std::string name{};
  std::string dtype{};
};

/// Spectrograms of signals (batch, samples, channels) (channels_first: (batch, channels, samples)), as Keras's
/// STFTSpectrogram computes them: each channel convolved with the window times the real DFT's cosines and sines
/// (its weights real_kernel and imag_kernel, (frame_length, 1, fft_length / 2 + 1), trainable as in Keras), one
/// frame every frame_step. Output (batch, frames, channels · bins) channels-major, or with expand_dims (batch,
/// frames, bins, channels); channels_first (batch, channels · bins, frames) or (batch, channels, frames, bins).
/// "stft" mode has 2 · bins values per channel. Computes in float32.
class STFTSpectrogram : public Layer {
 public:
  explicit STFTSpectrogram(STFTSpectrogramOptions options = {});
  OSPREY_KERAS_LAYER(STFTSpectrogram)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "STFTSpectrogram"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  const STFTSpectrogramOptions& options() const { return o_; }

 private:
  Tensor conv_frames(const Tensor& signals, const Variable& kernel) const;
  STFTSpectrogramOptions o_;
  int64_t step_ = 0, fft_ = 0;
  Variable* real_ = nullptr;
  Variable* imag_ = nullptr;
};

/// keras.layers.MelSpectrogram's arguments.
struct MelSpectrogramOptions {
  int64_t fft_length = 2048;
  int64_t sequence_stride = 512;
  std::optional<int64_t> sequence_length{};  ///< default fft_length
  std::optional<std::string> window = "hann";  ///< "hann" or "hamming" (TensorFlow's periodic windows), or none
  int64_t sampling_rate = 16000;
  int64_t num_mel_bins = 128;
  double min_freq = 20.0;
  std::optional<double> max_freq{};  ///< default sampling_rate / 2 (an integer, as Keras)
  bool power_to_db = true;
  double top_db = 80.0;
  double mag_exp = 2.0;
  double min_power = 1e-10;
  double ref_power = 1.0;
  std::string name{};
  std::string dtype{};
};

/// Mel spectrograms of signals (batch, samples), or of one signal (samples,), as Keras's MelSpectrogram:
/// |keras::ops::stft(center=true)|^mag_exp times the HTK mel filter bank (linear_to_mel_weight_matrix), then when
/// power_to_db 10·log10 of it over ref_power, floored at (the largest value of the whole batch) - top_db. Output
/// (batch, num_mel_bins, frames), frames = 1 + samples / sequence_stride (for an even fft_length). No weights;
/// computes in float32.
class MelSpectrogram : public Layer {
 public:
  explicit MelSpectrogram(MelSpectrogramOptions options = {});
  OSPREY_KERAS_LAYER(MelSpectrogram)
  bool recordable() const override { return true; }
  std::string class_name() const override { return "MelSpectrogram"; }
  std::string get_config() const override;
  Shape build(const Shape& input_shape) override;
  Tensor call(const Tensor& inputs, bool training) override;
  /// Keras's linear_to_mel_weight_matrix: (num_spectrogram_bins, num_mel_bins) triangles in the mel scale, the DC
  /// bin zero.
  static Tensor linear_to_mel_weight_matrix(int64_t num_mel_bins, int64_t num_spectrogram_bins, double sampling_rate,
                                            double lower_edge_hertz, double upper_edge_hertz);
  const MelSpectrogramOptions& options() const { return o_; }

 private:
  MelSpectrogramOptions o_;
  int64_t sequence_length_ = 0;
  double max_freq_ = 0.0;
};

}  // namespace osprey::keras::layers
