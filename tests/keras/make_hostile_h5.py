# Makes the crafted .weights.h5 files of tests/data/hostile/ (test_hostile_input.cpp): each holds the weights of
# Sequential([Input((3,)), Dense(2)]) in Keras's layout (layers/dense/vars/0 kernel, /1 bias), with the kernel
# replaced by something a loader must refuse. Run: python3 tests/keras/make_hostile_h5.py   (pip h5py)
import os
import h5py
import numpy as np

here = os.path.join(os.path.dirname(__file__), "..", "data", "hostile")
os.makedirs(here, exist_ok=True)


def make(name, kernel):
    with h5py.File(os.path.join(here, name), "w") as f:
        g = f.create_group("layers/dense/vars")
        kernel(f, g)
        g.create_dataset("1", data=np.zeros(2, "float32"))
        f.create_group("vars")


make("soft_link.weights.h5", lambda f, g: (f.create_dataset("elsewhere", data=np.ones((3, 2), "float32")),
                                           g.__setitem__("0", h5py.SoftLink("/elsewhere"))))
make("external_link.weights.h5", lambda f, g: g.__setitem__("0", h5py.ExternalLink("/etc/passwd", "/")))
make("external_storage.weights.h5",
     lambda f, g: g.create_dataset("0", shape=(3, 2), dtype="float32", external=[("/etc/passwd", 0, 24)]))
make("huge_shape.weights.h5",
     lambda f, g: g.create_dataset("0", shape=(2**31, 2**31), dtype="float32", chunks=(1, 1)))


def bad_optimizer_slot(f, g):
    # Good weights and Adam's state (iterations, learning rate, m/v of kernel, m/v of bias), except the last slot:
    # the bias's velocity has 3 values where the bias has 2. The loader builds the slots to read them, then fails.
    g.create_dataset("0", data=np.full((3, 2), 0.5, "float32"))
    o = f.create_group("optimizer/vars")
    o.create_dataset("0", data=np.int64(7))
    o.create_dataset("1", data=np.float32(0.01))
    o.create_dataset("2", data=np.ones((3, 2), "float32"))
    o.create_dataset("3", data=np.ones((3, 2), "float32"))
    o.create_dataset("4", data=np.ones(2, "float32"))
    o.create_dataset("5", data=np.ones(3, "float32"))


make("bad_optimizer_slot.weights.h5", bad_optimizer_slot)
make("good.weights.h5", lambda f, g: g.create_dataset("0", data=np.full((3, 2), 0.5, "float32")))


def huge_iterations(f, g):
    # Good weights and an optimizer whose step count is 2^63 - 1: the next update's iterations + 1 would overflow.
    g.create_dataset("0", data=np.full((3, 2), 0.5, "float32"))
    o = f.create_group("optimizer/vars")
    o.create_dataset("0", data=np.int64(2**63 - 1))
    o.create_dataset("1", data=np.float32(0.01))


make("huge_iterations.weights.h5", huge_iterations)
print("wrote", sorted(os.listdir(here)))
