# Keras 3's MixUp, CutMix, RandAugment and AugMix in a model (tests/keras/test_mix.cpp): a small CNN behind
# MixUp(alpha=0.3, seed=7), CutMix(factor=(0.2, 0.8)), RandAugment(num_ops=3, factor=0.7, seed=5) and AugMix(2 chains
# of depth 2, factor 0.4, alpha 0.5, all_ops=False), saved compiled by Keras (tests/data/keras_mix.keras) with its
# predictions (the layers are the identity in inference), the layers' configs and their operations' configs
# (tests/data/keras_mix.json).
# Their training draws are Keras's own (no library draws the same numbers), so no training numbers are recorded.
# Run: python3 tests/keras/keras_mix_reference.py   (pip tensorflow-cpu keras)
import json, os
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
from keras import layers as L

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "data")
keras.utils.set_random_seed(3)
rng = np.random.default_rng(211)
x = rng.uniform(0, 255, (6, 8, 8, 3)).astype("float32")
inp = keras.Input((8, 8, 3), name="image")
h = L.MixUp(alpha=0.3, seed=7, name="mix_up")(inp)
h = L.CutMix(factor=(0.2, 0.8), name="cut_mix")(h)
h = L.RandAugment(num_ops=3, factor=0.7, seed=5, name="rand_augment")(h)
h = L.AugMix(num_chains=2, chain_depth=2, factor=0.4, alpha=0.5, all_ops=False, name="aug_mix")(h)
h = L.Rescaling(1 / 255.0, name="scale")(h)
h = L.GlobalAveragePooling2D(name="pool")(L.Conv2D(4, 3, activation="relu", name="conv")(h))
model = keras.Model(inp, L.Dense(2, activation="softmax", name="out")(h), name="mixing")
model.compile(optimizer="adam", loss="categorical_crossentropy")
model.save(os.path.join(DATA, "keras_mix.keras"))
ref = {"x": x.tolist(), "predict": model.predict(x, verbose=0).tolist(),
       "configs": {name: model.get_layer(name).get_config() for name in ("mix_up", "cut_mix", "rand_augment", "aug_mix")},
       "aug_mix_ops": {key: getattr(model.get_layer("aug_mix"), key).get_config()
                       for key in model.get_layer("aug_mix")._augment_layers},
       "aug_mix_default": L.AugMix().get_config(),
       # RandAugment's operations as Keras makes them (their configs), and another RandAugment's config.
       "rand_augment_ops": {key: getattr(model.get_layer("rand_augment"), key).get_config()
                            for key in L.RandAugment._AUGMENT_LAYERS},
       "rand_augment_other": L.RandAugment(value_range=(0, 1), num_ops=1, factor=(0.1, 0.3),
                                           interpolation="nearest").get_config(),
       "cut_mix_default": L.CutMix().get_config(), "cut_mix_single": L.CutMix(factor=0.4).get_config()}
with open(os.path.join(DATA, "keras_mix.json"), "w") as f:
    json.dump(ref, f, separators=(",", ":"))
    f.write("\n")
print("wrote keras_mix.keras and keras_mix.json")
