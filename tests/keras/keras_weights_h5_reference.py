# Writes the Keras 3 .weights.h5 files in tests/data/ used by tests/keras/test_weights_h5.cpp, and prints the
# weights Keras reaches one step later (pasted into that test). Run: python3 tests/keras/keras_weights_h5_reference.py
# Model: Input(3) -> BatchNormalization -> Dense(4, relu) -> Dense(2), mse; Dense weights sin(0.7 k + n) (n: index in
# get_weights()). (A BatchNormalization after a Dense would make that bias's gradient ~0, which Adam turns into noise.)
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from keras import layers, optimizers as O
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "data")
x = np.array([[np.sin(0.3 * (3 * i + j)) for j in range(3)] for i in range(8)], "float32")
y = np.array([[np.cos(0.5 * (2 * i + j)) for j in range(2)] for i in range(8)], "float32")
def model(opt):
    m = keras.Sequential([layers.Input(shape=(3,)), layers.BatchNormalization(), layers.Dense(4, activation="relu"), layers.Dense(2)])
    ws = []
    for n, w in enumerate(m.get_weights()):
        ws.append(np.sin(0.7 * np.arange(w.size) + n).reshape(w.shape).astype("float32") if n >= 4 else w)
    m.set_weights(ws)
    m.compile(optimizer=opt, loss="mse")
    return m
np.set_printoptions(precision=9)
for name, opt in [("adam", O.Adam(learning_rate=0.05)), ("rmsprop", O.RMSprop(learning_rate=0.01, momentum=0.5, centered=True)),
                  ("nadam", O.Nadam(learning_rate=0.02)), ("sgd", O.SGD(learning_rate=0.1, momentum=0.9))]:
    m = model(opt)
    m.train_on_batch(x, y)
    m.save_weights(os.path.join(out, f"keras_{name}_step1.weights.h5"))
    m.train_on_batch(x, y)
    print(name, repr(np.concatenate([w.ravel() for w in m.get_weights()]).astype("float64").tolist()))
