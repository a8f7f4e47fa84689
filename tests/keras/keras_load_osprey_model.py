# Cross-check (run by hand, needs pip keras): Keras 3 loads the .keras file Osprey writes. Run the keras_tests
# ModelFile.* tests first (they leave /tmp/osprey_model_file_test/regressor.keras), then
# python3 tests/keras/keras_load_osprey_model.py  -- prints the model, its optimizer state and predictions.
import os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
m = keras.models.load_model("/tmp/osprey_model_file_test/regressor.keras")
m.summary()
print("optimizer", type(m.optimizer).__name__, "iterations", int(m.optimizer.iterations.numpy()),
      "variables", len(m.optimizer.variables))
x = np.array([[np.sin(0.37 * (6 * i + j)) for j in range(6)] for i in range(16)], "float32")
print("predict", np.array(m.predict(x[:3], verbose=0)).ravel().tolist())
