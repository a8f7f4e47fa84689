# Regenerates tests/data/keras_conv.json: every convolution, pooling and spatial reshaping layer Osprey has, in three
# Keras 3 models (1-D, 2-D and 3-D inputs; strides, dilation, groups, "same"/"causal" padding, channels_first,
# depthwise, separable and transposed kernels, Resizing / CenterCrop / Rescaling, BatchNormalization over feature maps). For each: the initial weights, each
# branch's forward values, the model's predictions, the gradients of an mse loss with respect to every trainable
# weight, two epochs of SGD and the trained weights. tests/keras/test_conv_layers.cpp checks Osprey against them.
# Run: python3 tests/keras/keras_conv_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, tensorflow as tf
from keras import layers as L

keras.utils.set_random_seed(7)
rng = np.random.default_rng(11)
N = 16


def model_2d():
    x = keras.Input((8, 9, 3), name="x")
    c1 = L.Conv2D(4, 3, padding="same", activation="relu", name="c_same")(x)
    c2 = L.Conv2D(4, (2, 3), strides=2, padding="same", name="c_strided")(x)
    c3 = L.Conv2D(6, 3, dilation_rate=2, groups=3, name="c_grouped")(x)
    c4 = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", name="dw")(x)
    c5 = L.SeparableConv2D(5, 3, strides=(2, 1), padding="same", depth_multiplier=2, activation="tanh",
                           name="sep")(x)
    cf = L.Permute((3, 1, 2), name="to_cf")(x)
    c6 = L.Conv2D(4, (3, 2), data_format="channels_first", name="c_first")(cf)
    bn = L.BatchNormalization(name="bn")(c1)
    branches = [
        c1, c2, c3, c4, c5, c6,
        L.MaxPooling2D(2, name="max")(bn),
        L.AveragePooling2D(3, strides=2, padding="same", name="avg_same")(c1),
        L.MaxPooling2D((2, 3), strides=(1, 2), padding="same", name="max_same")(x),
        L.MaxPooling2D(2, data_format="channels_first", name="max_first")(c6),
        L.GlobalAveragePooling2D(name="gap")(c3),
        L.GlobalMaxPooling2D(keepdims=True, name="gmp")(c4),
        L.GlobalAveragePooling2D(data_format="channels_first", name="gap_first")(c6),
        L.ZeroPadding2D(((1, 0), (2, 1)), name="zpad")(c2),
        L.Cropping2D(((1, 1), (0, 2)), name="crop")(c1),
        L.UpSampling2D((2, 1), name="up")(c2),
        L.UpSampling2D(2, data_format="channels_first", name="up_first")(c6),
        L.Conv2DTranspose(3, 3, strides=2, padding="same", activation="relu", name="ct_same")(c2),
        L.Conv2DTranspose(2, (2, 3), strides=(2, 1), name="ct_valid")(c2),
        L.Conv2DTranspose(2, 3, strides=2, output_padding=1, name="ct_outpad")(c2),
        L.Conv2DTranspose(2, 3, dilation_rate=2, padding="same", name="ct_dilated")(c1),
        L.Conv2DTranspose(3, 2, strides=2, data_format="channels_first", name="ct_first")(c6),
        L.Resizing(11, 5, name="resize_bilinear")(c1),
        L.Resizing(4, 6, interpolation="nearest", name="resize_nearest")(c2),
        L.Resizing(5, 5, crop_to_aspect_ratio=True, name="resize_crop")(c1),
        L.CenterCrop(5, 6, name="center")(c1),
        L.CenterCrop(10, 4, name="center_small")(c1),
        L.Rescaling(0.5, offset=-1.0, name="rescale")(c4),
    ]
    return x, branches


def model_1d():
    x = keras.Input((10, 4), name="x")
    c1 = L.Conv1D(5, 3, padding="causal", dilation_rate=2, name="c_causal")(x)
    c2 = L.Conv1D(6, 4, strides=2, padding="same", groups=2, activation="relu", name="c_grouped")(x)
    c3 = L.DepthwiseConv1D(3, depth_multiplier=2, name="dw")(x)
    c4 = L.SeparableConv1D(3, 3, padding="same", name="sep")(x)
    branches = [
        c1, c2, c3, c4,
        L.MaxPooling1D(2, name="max")(c1),
        L.AveragePooling1D(3, strides=1, padding="same", name="avg_same")(c2),
        L.GlobalMaxPooling1D(name="gmp")(c3),
        L.GlobalAveragePooling1D(name="gap")(c4),
        L.ZeroPadding1D((2, 1), name="zpad")(c1),
        L.Cropping1D((1, 2), name="crop")(c3),
        L.UpSampling1D(3, name="up")(c2),
        L.Conv1DTranspose(3, 4, strides=2, padding="same", name="ct_same")(c2),
        L.Conv1DTranspose(2, 3, dilation_rate=2, name="ct_dilated")(c1),
    ]
    return x, branches


def model_3d():
    x = keras.Input((4, 5, 6, 2), name="x")
    c1 = L.Conv3D(3, (2, 3, 2), strides=(1, 2, 1), padding="same", activation="relu", name="c_same")(x)
    c2 = L.Conv3D(2, 2, name="c_valid")(x)
    branches = [
        c1, c2,
        L.MaxPooling3D(2, name="max")(c2),
        L.AveragePooling3D((2, 2, 3), padding="same", name="avg_same")(c1),
        L.GlobalAveragePooling3D(name="gap")(c1),
        L.GlobalMaxPooling3D(name="gmp")(c2),
        L.ZeroPadding3D(1, name="zpad")(c2),
        L.Cropping3D(((1, 0), (1, 1), (0, 2)), name="crop")(c1),
        L.UpSampling3D((1, 2, 2), name="up")(c2),
        L.Conv3DTranspose(2, 2, strides=(1, 2, 2), padding="same", name="ct")(c2),
    ]
    return x, branches


def weights_of(m):
    return {l.name: [w.numpy().tolist() for w in l.weights] for l in m.layers if l.weights}


def reference(make):
    x_in, branches = make()
    flat = [L.Flatten(name=f"flat{i}")(b) for i, b in enumerate(branches)]
    out = L.Dense(1, name="out")(L.Concatenate(name="cat")(flat))
    model = keras.Model(x_in, out)
    x = rng.uniform(-1, 1, (N,) + tuple(x_in.shape[1:])).astype("float32")
    y = rng.uniform(-1, 1, (N, 1)).astype("float32")
    ref = {"x": x.tolist(), "y": y.tolist(), "initial_weights": weights_of(model),
           "branches": [keras.Model(x_in, b)(x).numpy().tolist() for b in branches],
           "predict_before": model.predict(x, verbose=0).tolist()}
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    grads = tape.gradient(loss, model.trainable_weights)
    ref["loss_before"] = float(loss)
    ref["gradients"] = [g.numpy().tolist() for g in grads]
    ref["gradient_paths"] = [w.path for w in model.trainable_weights]
    # The gradient pass above ran in training mode: the BatchNormalization statistics moved. Put them back.
    for layer in model.layers:
        if layer.name in ref["initial_weights"]:
            layer.set_weights([np.array(w, dtype="float32") for w in ref["initial_weights"][layer.name]])
    model.compile(optimizer=keras.optimizers.SGD(0.001), loss="mse")
    hist = model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
    ref["history"] = [float(v) for v in hist.history["loss"]]
    ref["final_weights"] = weights_of(model)
    ref["predict_after"] = model.predict(x, verbose=0).tolist()
    return ref


refs = {"conv2d": reference(model_2d), "conv1d": reference(model_1d), "conv3d": reference(model_3d)}
path = os.path.join(os.path.dirname(__file__), "..", "data", "keras_conv.json")
with open(path, "w") as f:
    json.dump({"keras_version": keras.__version__, "reference": refs}, f)
print("wrote", os.path.normpath(path), "keras", keras.__version__)
