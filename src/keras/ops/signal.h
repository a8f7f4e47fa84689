// The windows (and the transform size limits) shared by keras::ops::stft/istft and the audio layers (STFTSpectrogram,
// MelSpectrogram).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace osprey::keras::signal {

/// The largest fft_length of STFTSpectrogram, whose kernels are DFT matrices fft_length × (fft_length / 2 + 1), as
/// Keras's.
constexpr int64_t kMaxFftLength = 8192;
/// The largest fft_length of stft, istft and MelSpectrogram (an FFT per frame): 2^24 samples.
constexpr int64_t kMaxTransformLength = int64_t{1} << 24;

/// scipy.signal.get_window(name, n, fftbins=periodic) for the windows Osprey knows (hann, hamming, blackman,
/// bartlett, triang, boxcar, cosine, blackmanharris, nuttall, flattop, bohman and scipy's aliases of them);
/// TensorFlow's hann_window/hamming_window with periodic = true are the same values. ValueError naming the known
/// ones for another name.
std::vector<double> window(const std::string& name, int64_t n, bool periodic, const std::string& what);

}  // namespace osprey::keras::signal
