# Cross-check (run by hand, needs pip keras): Keras 3 loads the .weights.h5 files Osprey writes, optimizer state
# included. Run the keras_tests WeightsH5.* tests first (they leave the files in /tmp/osprey_weights_h5_test), then
# python3 tests/keras/keras_load_osprey_h5.py  -- prints "weights equal True optimizer equal True" per optimizer.
import os, warnings
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras, h5py
from keras import layers, optimizers as O
d = "/tmp/osprey_weights_h5_test"
for name, opt in [("adam", O.Adam(learning_rate=0.05)), ("rmsprop", O.RMSprop(learning_rate=0.01, momentum=0.5, centered=True)),
                  ("nadam", O.Nadam(learning_rate=0.02)), ("sgd", O.SGD(learning_rate=0.1, momentum=0.9))]:
    m = keras.Sequential([layers.Input(shape=(3,)), layers.BatchNormalization(), layers.Dense(4, activation="relu"), layers.Dense(2)])
    m.compile(optimizer=opt, loss="mse"); m.optimizer.build(m.trainable_variables)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m.load_weights(f"{d}/{name}.weights.h5")
    with h5py.File(f"{d}/{name}.weights.h5") as f:
        ok = all(np.array_equal(a, f["layers"][k]["vars"][str(i)][()]) for k, ws in [("batch_normalization", m.layers[0].weights), ("dense", m.layers[1].weights), ("dense_1", m.layers[2].weights)] for i, a in enumerate([x.numpy() for x in ws]))
        opt_ok = all(np.array_equal(v.numpy(), f["optimizer/vars"][str(i)][()]) for i, v in enumerate(m.optimizer.variables))
    print(name, "iterations", int(m.optimizer.iterations.numpy()), "weights equal", ok, "optimizer equal", opt_ok, "warnings", [str(x.message)[:80] for x in w])
m = keras.Sequential([layers.Input(shape=(3,)), layers.Dense(4), layers.LeakyReLU(), layers.Dense(2)])
m.load_weights(f"{d}/uncompiled.weights.h5"); print("uncompiled loaded", [w.shape for w in m.get_weights()])
