# The custom objects of the Keras-file tests, registered under package "osprey_test": a layer, a loss function, a
# metric class and a subclassed model. Imported by keras_model_files_reference.py (which makes the files) and
# keras_load_osprey_files.py (which loads Osprey's); test_model_files.cpp defines the same classes in C++.
import keras
from keras import layers as L


@keras.saving.register_keras_serializable(package="osprey_test")
class Scale(keras.layers.Layer):
    """x * w, one factor per feature, initialised to `init` (the custom layer of the tests)."""

    def __init__(self, init=1.0, **kwargs):
        super().__init__(**kwargs)
        self.init = init

    def build(self, input_shape):
        self.w = self.add_weight(shape=(input_shape[-1],), initializer=keras.initializers.Constant(self.init),
                                 name="w")

    def call(self, x):
        return x * self.w

    def get_config(self):
        return {**super().get_config(), "init": self.init}


@keras.saving.register_keras_serializable(package="osprey_test")
def scaled_mse(y_true, y_pred):
    """2 * mean squared error: the custom loss function of the tests."""
    return 2.0 * keras.ops.mean(keras.ops.square(y_true - y_pred), axis=-1)


@keras.saving.register_keras_serializable(package="osprey_test")
class PowerError(keras.metrics.MeanMetricWrapper):
    """mean |y - p| ** power: the custom metric class of the tests."""

    def __init__(self, power=2.0, name="power_error", dtype=None):
        super().__init__(fn=lambda y, p: keras.ops.mean(keras.ops.abs(y - p) ** power, axis=-1), name=name,
                         dtype=dtype)
        self.power = power

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype, "power": self.power}


@keras.saving.register_keras_serializable(package="osprey_test")
class TwoLayer(keras.Model):
    """A subclassed model with a config: its weights are keyed by attribute names ("encoder/vars") and by its
    layers list ("layers/dense_1/vars" for `readout`, whose name sorts after "layers")."""

    def __init__(self, units=4, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.encoder = L.Dense(units, activation="relu")
        self.readout = L.Dense(1)

    def call(self, x):
        return self.readout(self.encoder(x))

    def get_config(self):
        return {**super().get_config(), "units": self.units}
