# Writes tests/data/keras_model.keras with Keras 3 and prints its predictions on the test's inputs (pasted into
# tests/keras/test_model_file.cpp). Run: python3 tests/keras/keras_model_file_reference.py
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from keras import layers, optimizers as O, regularizers as R
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "data")
keras.utils.set_random_seed(1)
x = np.array([[np.sin(0.37 * (6 * i + j)) for j in range(6)] for i in range(16)], "float32")
y = np.array([i % 3 for i in range(16)], "int32")
m = keras.Sequential([layers.Input(shape=(6,)), layers.Dense(8, activation="relu", kernel_regularizer=R.L2(0.01)),
                      layers.BatchNormalization(), layers.Dropout(0.25), layers.Dense(3, activation="softmax")],
                     name="classifier")
m.compile(optimizer=O.Adam(learning_rate=O.schedules.ExponentialDecay(0.01, 10, 0.9)),
          loss="sparse_categorical_crossentropy", metrics=["accuracy"])
m.fit(x, y, epochs=2, batch_size=8, verbose=0)
m.save(os.path.join(out, "keras_model.keras"))
print("predict", repr(np.array(m.predict(x[:4], verbose=0), "float64").ravel().tolist()))
print("evaluate", m.evaluate(x, y, verbose=0))
# A binary classifier compiled with configured metric objects (tests/data/keras_metrics.keras).
from keras import metrics as M
b = keras.Sequential([layers.Input(shape=(6,)), layers.Dense(1, activation="sigmoid")])
b.compile(optimizer="sgd", loss="binary_crossentropy",
          metrics=[M.AUC(num_thresholds=50, curve="PR", name="pr_auc"), M.Precision(thresholds=0.3),
                   M.BinaryAccuracy(threshold=0.6)])
yb = np.array([(i * 7) % 3 == 0 for i in range(16)], "float32").reshape(16, 1)
b.fit(x, yb, epochs=1, batch_size=16, verbose=0)
b.save(os.path.join(out, "keras_metrics.keras"))
print("metrics_evaluate", b.evaluate(x, yb, verbose=0, return_dict=True))
