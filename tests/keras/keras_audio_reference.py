# Regenerates tests/data/keras_audio.json: Keras 3's audio ops and layers on its TensorFlow backend —
# keras.ops.stft / istft (windows, centring, gradients), keras.layers.STFTSpectrogram (every mode, both data formats,
# windows and scalings, its kernels as initialised, gradients, configs) and keras.layers.MelSpectrogram (its
# mel-weight matrix, dB scaling, batched and single signals, configs).
# tests/keras/test_audio.cpp checks Osprey against it.
# Run: python3 tests/keras/keras_audio_reference.py   (pip tensorflow-cpu keras scipy)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import layers as L, ops

rng = np.random.default_rng(71)
ref = {}


def tl(v):
    return np.asarray(v).tolist()


# ---- keras.ops.stft / istft ----
x = rng.normal(0, 1, (2, 300)).astype("float32")
stft_cases = []
for seq_len, stride, fft, window, center in [(64, 16, 64, "hann", True), (48, 20, 64, "hamming", False),
                                             (32, 8, 32, None, True), (30, 12, 32, "array", True),
                                             (64, 64, 128, "hann", False)]:
    win = rng.uniform(0.2, 1.0, seq_len).astype("float32") if window == "array" else window
    xt = tf.constant(x)
    w1 = rng.uniform(-1, 1, (2, 1, fft // 2 + 1)).astype("float32")
    with tf.GradientTape() as tape:
        tape.watch(xt)
        re, im = ops.stft(xt, seq_len, stride, fft, window=win, center=center)
        w_re = rng.uniform(-1, 1, re.shape).astype("float32")
        w_im = rng.uniform(-1, 1, im.shape).astype("float32")
        loss = tf.reduce_sum(re * w_re) + tf.reduce_sum(im * w_im)
    g = tape.gradient(loss, xt)
    back = ops.istft((re, im), seq_len, stride, fft, window=win, center=center)
    back_len = ops.istft((re, im), seq_len, stride, fft, length=250, window=win, center=center)
    # istft of values that are no STFT of any signal (overlap-add of inconsistent frames)
    r2 = rng.normal(0, 1, re.shape).astype("float32")
    i2 = rng.normal(0, 1, im.shape).astype("float32")
    xt2 = tf.constant(r2)
    with tf.GradientTape() as tape:
        tape.watch(xt2)
        other = ops.istft((xt2, tf.constant(i2)), seq_len, stride, fft, window=win, center=center)
        w_o = rng.uniform(-1, 1, other.shape).astype("float32")
        l2 = tf.reduce_sum(other * w_o)
    g2 = tape.gradient(l2, xt2)
    stft_cases.append({"sequence_length": seq_len, "sequence_stride": stride, "fft_length": fft,
                       "window": tl(win) if window == "array" else window, "center": center,
                       "real": tl(re), "imag": tl(im), "w_real": tl(w_re), "w_imag": tl(w_im), "grad": tl(g),
                       "istft": tl(back), "istft_250": tl(back_len), "other_real": tl(r2), "other_imag": tl(i2),
                       "other": tl(other), "w_other": tl(w_o), "other_grad": tl(g2)})
ref["stft"] = {"x": tl(x), "cases": stft_cases}

# ---- STFTSpectrogram ----
sig = rng.normal(0, 1, (2, 120, 2)).astype("float32")
spec_cases = []
for kw in [dict(mode="log", frame_length=16, frame_step=8),
           dict(mode="magnitude", frame_length=20, frame_step=6, fft_length=32, window="hamming", periodic=True),
           dict(mode="psd", frame_length=16, window="blackman", scaling="spectrum"),
           dict(mode="real", frame_length=12, frame_step=5, window=None, scaling=None, padding="same"),
           dict(mode="imag", frame_length=16, frame_step=4, window="bartlett", expand_dims=True),
           dict(mode="angle", frame_length=16, frame_step=8, window="boxcar"),
           dict(mode="stft", frame_length=16, frame_step=8, window="triang", expand_dims=True),
           dict(mode="log", frame_length=16, frame_step=8, data_format="channels_first"),
           dict(mode="stft", frame_length=10, frame_step=3, padding="same", data_format="channels_first",
                expand_dims=True)]:
    layer = L.STFTSpectrogram(**kw)
    inp = np.transpose(sig, (0, 2, 1)) if kw.get("data_format") == "channels_first" else sig
    xt = tf.constant(inp)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt)
        w = rng.uniform(-1, 1, y.shape).astype("float32")
        loss = tf.reduce_sum(y * w)
    sources = [xt] + list(layer.trainable_weights)
    grads = tape.gradient(loss, sources)
    spec_cases.append({"kwargs": kw, "x": tl(inp), "y": tl(y), "w": tl(w),
                       "weights": {v.name: tl(v) for v in layer.weights},
                       "grads": [tl(g) for g in grads], "weight_names": [v.name for v in layer.trainable_weights],
                       "config": layer.get_config(), "output_shape": list(layer.compute_output_shape(inp.shape))})
ref["stft_spectrogram"] = spec_cases


def rejected(make):
    try:
        make()
        return False
    except (ValueError, TypeError):
        return True


ref["stft_spectrogram_rejects"] = {
    "frame_step_too_big": rejected(lambda: L.STFTSpectrogram(frame_length=8, frame_step=9)),
    "fft_too_short": rejected(lambda: L.STFTSpectrogram(frame_length=16, fft_length=8)),
    "mode": rejected(lambda: L.STFTSpectrogram(mode="power")),
    "scaling": rejected(lambda: L.STFTSpectrogram(scaling="l2")),
    "padding": rejected(lambda: L.STFTSpectrogram(padding="causal")),
    "window": rejected(lambda: L.STFTSpectrogram(window="nonesuch")),
}

# ---- MelSpectrogram ----
audio = rng.normal(0, 0.3, (2, 1000)).astype("float32")
mel_cases = []
for kw in [dict(fft_length=256, sequence_stride=64, num_mel_bins=20, sampling_rate=8000),
           dict(fft_length=128, sequence_stride=50, sequence_length=100, window="hamming", num_mel_bins=16,
                sampling_rate=16000, min_freq=100.0, max_freq=6000.0, power_to_db=False, mag_exp=1.0),
           dict(fft_length=64, sequence_stride=32, num_mel_bins=8, sampling_rate=4000, top_db=20.0, min_power=1e-3,
                ref_power=2.0)]:
    layer = L.MelSpectrogram(**kw)
    y = layer(audio)
    single = layer(audio[0])
    matrix = layer.linear_to_mel_weight_matrix(num_mel_bins=layer.num_mel_bins,
                                               num_spectrogram_bins=layer.fft_length // 2 + 1,
                                               sampling_rate=layer.sampling_rate, lower_edge_hertz=layer.min_freq,
                                               upper_edge_hertz=layer.max_freq)
    mel_cases.append({"kwargs": kw, "y": tl(y), "single": tl(single), "matrix": tl(matrix),
                      "config": layer.get_config(), "output_shape": list(layer.compute_output_shape(audio.shape))})
ref["mel_spectrogram"] = {"x": tl(audio), "cases": mel_cases}
ref["mel_rejects"] = {"fft_shorter_than_sequence": rejected(lambda: L.MelSpectrogram(fft_length=64,
                                                                                    sequence_length=100))}

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_audio.json"), "w") as f:
    json.dump(ref, f)
print("wrote keras_audio.json")
