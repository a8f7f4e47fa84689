# Prints the Keras 3 reference values used by tests/keras/test_keras_reference.cpp (pip tensorflow-cpu keras).
# Run: python3 tests/keras/keras_reference.py
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from keras import optimizers as O, losses as L
np.set_printoptions(precision=9)
w0 = np.array([0.5, -1.0, 2.0, 0.0], dtype="float32")
grads = [np.array([0.1, -0.2, 0.3, -0.4], "float32"), np.array([-0.5, 0.25, 0.0, 1.0], "float32"), np.array([0.3, 0.3, -0.3, 0.01], "float32")]
for name, opt in [("adamw", O.AdamW(learning_rate=0.01)), ("adagrad", O.Adagrad(learning_rate=0.1)), ("adamax", O.Adamax(learning_rate=0.01)), ("nadam", O.Nadam(learning_rate=0.01)),
                  ("sgd_sched", O.SGD(learning_rate=O.schedules.ExponentialDecay(0.1, 2, 0.5, staircase=True)))]:
    v = keras.Variable(w0.copy())
    for g in grads:
        opt.apply_gradients([(keras.ops.convert_to_tensor(g), v)])
    print(name, repr(np.array(v.numpy(), dtype="float64").tolist()))
for name, s in [("exp", O.schedules.ExponentialDecay(0.1, 10, 0.5)), ("pw", O.schedules.PiecewiseConstantDecay([5, 10], [1.0, 0.5, 0.1])),
                ("inv", O.schedules.InverseTimeDecay(0.1, 10, 0.5, staircase=True)), ("cos", O.schedules.CosineDecay(0.1, 100, alpha=0.1)),
                ("cosw", O.schedules.CosineDecay(0.0, 100, warmup_target=0.2, warmup_steps=10))]:
    print(name, [float(s(st)) for st in [0, 5, 10, 15, 50, 120]])
yt = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, -1.0]], "float32"); yp = np.array([[0.1, 0.8], [0.6, 0.3], [1.5, -3.0]], "float32")
for name, l in [("mape", L.MeanAbsolutePercentageError(reduction=None)), ("huber", L.Huber(reduction=None)), ("logcosh", L.LogCosh(reduction=None)),
                ("hinge", L.Hinge(reduction=None)), ("kld", L.KLDivergence(reduction=None))]:
    print(name, np.array(l(yt, yp), dtype="float64").tolist())
logits = np.array([[2.0, -1.0, 0.5], [-0.5, 0.0, 3.0]], "float32"); oh = np.array([[1, 0, 0], [0, 0, 1]], "float32")
print("cce_logits", np.array(L.CategoricalCrossentropy(from_logits=True, reduction=None)(oh, logits), "float64").tolist())
print("scce_logits", np.array(L.SparseCategoricalCrossentropy(from_logits=True, reduction=None)(np.array([0, 2]), logits), "float64").tolist())
bl = np.array([[2.0], [-1.5], [0.3]], "float32"); by = np.array([[1.0], [0.0], [1.0]], "float32")
print("bce_logits", np.array(L.BinaryCrossentropy(from_logits=True, reduction=None)(by, bl), "float64").tolist())
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
M = keras.metrics
yt1 = np.array([[1], [0], [1], [1], [0], [0]], "float32"); yp1 = np.array([[0.9], [0.4], [0.35], [0.8], [0.6], [0.1]], "float32")
yt2 = np.array([[0], [1], [1], [0]], "float32"); yp2 = np.array([[0.7], [0.55], [0.2], [0.3]], "float32")
for name, m in [("precision", M.Precision()), ("recall", M.Recall()), ("auc_roc", M.AUC()), ("auc_pr", M.AUC(curve="PR")), ("auc_roc_10", M.AUC(num_thresholds=10))]:
    m.update_state(yt1, yp1); m.update_state(yt2, yp2); print(name, repr(float(m.result())))
p = np.array([[0.1, 0.5, 0.4], [0.7, 0.2, 0.1], [0.3, 0.3, 0.4], [0.2, 0.2, 0.6]], "float32")
oh = np.array([[0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 0, 0]], "float32"); sp = np.array([2, 1, 0, 0])
m = M.TopKCategoricalAccuracy(k=2); m.update_state(oh, p); print("topk", repr(float(m.result())))
m = M.SparseTopKCategoricalAccuracy(k=2); m.update_state(sp, p); print("sparse_topk", repr(float(m.result())))
m = M.RootMeanSquaredError(); m.update_state(yt1, yp1); m.update_state(yt2, yp2); print("rmse", repr(float(m.result())))

# --- to_json references: tests/data/keras_to_json_seed.json (first print) and keras_to_json_layers.json ---
# import os, json
# os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
# import keras
# from keras import layers
# m = keras.Sequential([layers.Input(shape=(20,)), layers.Dense(64, activation="relu"), layers.Dropout(0.25), layers.BatchNormalization(), layers.Dense(1, activation="sigmoid")])
# m.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
# print(m.to_json())
# print(json.dumps(m.get_config()))
# import os, json
# os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
# import keras
# from keras import layers, optimizers as O, regularizers as R, constraints as C
# m = keras.Sequential([layers.Input(shape=(2, 6)), layers.Flatten(), layers.Reshape((4, -1)), layers.Flatten(), layers.Activation("tanh"),
#                       layers.LayerNormalization(), layers.Dense(3, kernel_initializer="he_normal", kernel_regularizer=R.L2(0.01), kernel_constraint=C.MaxNorm(2.0), use_bias=False)])
# m.compile(optimizer=O.SGD(learning_rate=0.1, momentum=0.9), loss="mse", metrics=["mae"])
# print(m.to_json())
# --- summary reference ---
# import os
# os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
# import keras
# from keras import layers
# m = keras.Sequential([layers.Input(shape=(64,)), layers.Dense(32, activation="relu"), layers.BatchNormalization(), layers.Dropout(0.2), layers.Dense(10, activation="softmax")])
# m.summary()
# import os
# os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
# import numpy as np, keras
# M = keras.metrics
# m = M.AUC(); m.update_state(np.array([[1],[1],[1]], "float32"), np.array([[0.2],[0.6],[0.9]], "float32")); print("auc all positive", float(m.result()))
# m = M.Precision(); m.update_state(np.array([[0],[0]], "float32"), np.array([[0.2],[0.1]], "float32")); print("precision no positives", float(m.result()))
# print("bce p=0/1", np.array(keras.losses.BinaryCrossentropy(reduction=None)(np.array([[1],[0],[1],[0]], "float32"), np.array([[1.0],[0.0],[0.0],[1.0]], "float32"))).tolist())
# print("leaky", np.array(keras.layers.LeakyReLU()(np.array([[-2.0, 3.0]], "float32"))).tolist())
# import os
# os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
# import numpy as np, keras
# from keras import layers
# m = keras.Sequential([layers.Input(shape=(1,)), layers.Dense(1, activation="sigmoid")])
# m.compile(optimizer="sgd", loss="binary_crossentropy")
# m.set_weights([np.array([[1.0]], "float32"), np.array([0.0], "float32")])
# x = np.array([[20.0], [-3.0]], "float32"); y = np.array([[0.0], [1.0]], "float32")
# print("evaluate (graph, TF shortcut)", m.evaluate(x, y, verbose=0))
# m.compile(optimizer="sgd", loss="binary_crossentropy", run_eagerly=True)
# print("evaluate (run_eagerly, clipped)", m.evaluate(x, y, verbose=0))
# import os
# os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
# import numpy as np, keras
# x = np.array([[-3.0, -1.5, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0]], "float32")
# for n in ["celu", "hard_shrink", "hard_sigmoid", "hard_silu", "hard_tanh", "log_sigmoid", "log_softmax", "mish", "relu6", "soft_shrink", "sparse_plus", "sparse_sigmoid", "squareplus", "tanh_shrink", "glu"]:
#     f = keras.activations.get(n)
#     print(n, np.array(f(x), "float64").tolist())
# import os
# os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
# import numpy as np, keras
# y = np.array([[1], [0], [1], [0]], "float32"); p = np.array([[0.9], [0.2], [0.3], [0.6]], "float32"); w = np.array([1.0, 2.0, 0.5, 0.0], "float32")
# for r in ["sum_over_batch_size", "sum", "mean_with_sample_weight"]:
#     l = keras.losses.BinaryCrossentropy(reduction=r)
#     print(r, float(l(y, p)), float(l(y, p, sample_weight=w)))
