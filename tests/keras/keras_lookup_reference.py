# Regenerates tests/data/keras_lookup.json: Keras 3's IntegerLookup on its TensorFlow backend — a given vocabulary
# with and without its special tokens, a mask token, no / one / several OOV indices (floormod, FarmHash, salted
# SipHash), invert, every output mode (tf_idf with given and adapted weights), pad_to_max_tokens, adapt() on arrays
# and on batches (counts, ties, max_tokens, the mask and OOV tokens left out), configs, and Keras's rejections.
# tests/keras/test_lookup.cpp checks Osprey's layer against it.
# Run: python3 tests/keras/keras_lookup_reference.py   (pip tensorflow-cpu keras)
import json, os, tempfile
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np, keras
import tensorflow as tf
from keras import layers as L

rng = np.random.default_rng(91)


def tl(v):
    return np.asarray(v).tolist()


vocab = [12, 36, 1138, 42, 7]
x = np.array([[12, 1138, 42, 5], [42, 1000, 36, 0], [-3, 7, 7, 2**40]], dtype="int64")
cases = []


def case(name, kw, inputs, adapt=None, batches=None):
    layer = L.IntegerLookup(**kw)
    if adapt is not None:
        layer.adapt(adapt)
    if batches is not None:
        layer.adapt(iter([np.asarray(b) for b in batches]))  # an iterable: one update_state per batch
    y = layer(inputs)
    entry = {"name": name, "kwargs": kw, "x": tl(inputs), "x_dtype": str(np.asarray(inputs).dtype), "y": tl(y),
             "y_dtype": str(np.asarray(y).dtype), "vocabulary": [int(v) for v in layer.get_vocabulary()],
             "vocabulary_no_special": [int(v) for v in layer.get_vocabulary(include_special_tokens=False)],
             "vocabulary_size": int(layer.vocabulary_size()), "config": layer.get_config()}
    if adapt is not None:
        entry["adapt"] = tl(adapt)
    if batches is not None:
        entry["batches"] = [tl(b) for b in batches]
    if kw.get("output_mode") in ("tf_idf", "tf-idf"):
        entry["idf_weights"] = tl(layer.idf_weights_const)
    cases.append(entry)


case("given", dict(vocabulary=vocab), x)
case("given_with_specials", dict(vocabulary=[-1] + vocab), x)
case("mask", dict(vocabulary=vocab, mask_token=0), x)
case("mask_and_specials", dict(vocabulary=[0, -1] + vocab, mask_token=0), x)
case("no_oov", dict(vocabulary=vocab + [5, 1000, 0, -3, 2**40], num_oov_indices=0), x)
case("floormod", dict(vocabulary=vocab, num_oov_indices=3, mask_token=0), x)
case("farmhash", dict(vocabulary=vocab, num_oov_indices=4, oov_method="farmhash"), x)
case("farmhash_salt", dict(vocabulary=vocab, num_oov_indices=5, oov_method="farmhash", salt=[3, 99]), x)
case("int32_input", dict(vocabulary=vocab), x[:, :3].astype("int32"))
case("float_input", dict(vocabulary=vocab), np.array([[12.9, -7.5, 42.0]], dtype="float32"))
case("rank1", dict(vocabulary=vocab), np.array([42, 12, 9], dtype="int64"))
case("rank3", dict(vocabulary=vocab), x.reshape(3, 2, 2))
inv_in = np.array([[0, 1, 2, 3], [4, 5, 6, 9]], dtype="int64")
case("invert", dict(vocabulary=vocab, invert=True), inv_in)
case("invert_mask", dict(vocabulary=vocab, invert=True, mask_token=0, oov_token=-7), inv_in)
case("invert_two_oov", dict(vocabulary=vocab, invert=True, num_oov_indices=2), inv_in)
case("one_hot", dict(vocabulary=vocab, output_mode="one_hot"), x[:, :1])
case("one_hot_mask", dict(vocabulary=vocab, output_mode="one_hot", mask_token=0), np.array([[12], [0], [99]]))
case("multi_hot", dict(vocabulary=vocab, output_mode="multi_hot"), x)
case("multi_hot_mask", dict(vocabulary=vocab, output_mode="multi_hot", mask_token=0), x)
case("binary", dict(vocabulary=vocab, output_mode="binary"), x)
case("count", dict(vocabulary=vocab, output_mode="count"), x)
case("count_padded", dict(vocabulary=vocab, output_mode="count", max_tokens=10, pad_to_max_tokens=True), x)
case("tf_idf_given", dict(vocabulary=vocab, output_mode="tf_idf", idf_weights=[0.5, 1.25, 2.0, 0.75, 3.0]), x)
case("tf_idf_given_specials", dict(vocabulary=[-1] + vocab, output_mode="tf_idf",
                                   idf_weights=[0.1, 0.5, 1.25, 2.0, 0.75, 3.0]), x)
case("tf_idf_padded", dict(vocabulary=vocab, output_mode="tf_idf", idf_weights=[0.5, 1.25, 2.0, 0.75, 3.0],
                           max_tokens=8, pad_to_max_tokens=True), x)
data = rng.integers(0, 12, (40, 5)).astype("int64")
data[0, 0] = -1  # the OOV token: left out of the vocabulary
data[1, :] = 0
case("adapt", dict(), data[:6], adapt=data)
case("adapt_max_tokens", dict(max_tokens=6), data[:6], adapt=data)
case("adapt_mask", dict(mask_token=0, max_tokens=7), data[:6], adapt=data)
case("adapt_rank1", dict(), np.array([3, 4, 5, 99]), adapt=data[:, 0])
case("adapt_ties", dict(), np.array([[1, 2, 3]]), adapt=np.array([[5, 3, 9, 3, 9, 5, 1, 2]]))
case("adapt_tf_idf", dict(output_mode="tf_idf"), data[:6], adapt=data)
case("adapt_tf_idf_rank1", dict(output_mode="tf_idf"), data[:6], adapt=data[:, 1])
case("adapt_tf_idf_padded", dict(output_mode="tf_idf", max_tokens=20, pad_to_max_tokens=True, mask_token=0),
     data[:6], adapt=data)
case("adapt_batches", dict(output_mode="tf_idf"), data[:6], batches=[data[:7], data[7:20, 0], data[20:]])
case("adapt_multi_hot", dict(output_mode="multi_hot", num_oov_indices=2), data[:6], adapt=data)


def write_vocabulary(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    f.write(text)
    f.close()
    return f.name


def file_case(name, text, kw, inputs):
    """The vocabulary as a file's path: the case keeps the file's text; its kwargs leave the path out."""
    path = write_vocabulary(text)
    case(name, dict(kw, vocabulary=path), inputs)
    cases[-1]["kwargs"] = kw
    cases[-1]["vocabulary_file_text"] = text
    os.unlink(path)


file_case("file", "12\n36\n1138\n42\n7\n", dict(), x)
file_case("file_no_final_newline", "12\n36\n1138\n42\n7", dict(), x)
file_case("file_crlf", "12\r\n36\r\n1138\r\n", dict(), x)
file_case("file_mask", "12\n36\n1138\n42\n7\n", dict(mask_token=0), x)
file_case("file_specials_are_terms", "-1\n12\n36\n", dict(), x)
file_case("file_two_oov", "12\n36\n1138\n", dict(num_oov_indices=2), x)
file_case("file_invert", "12\n36\n1138\n42\n7\n", dict(invert=True), inv_in)
file_case("file_multi_hot", "12\n36\n1138\n42\n7\n", dict(output_mode="multi_hot"), x)
file_case("file_over_max_tokens", "12\n36\n1138\n42\n7\n", dict(max_tokens=3), x)
ref = {"cases": cases}


def rejected(make):
    try:
        make()
        return False
    except (ValueError, TypeError, RuntimeError, tf.errors.OpError):  # OpError: TensorFlow's text-file table
        return True


def adapt_given():
    L.IntegerLookup(vocabulary=vocab).adapt(data)


def resize_after_call():
    layer = L.IntegerLookup(vocabulary=vocab, output_mode="multi_hot")
    layer(x)
    layer.set_vocabulary(vocab + [99])


def from_file(text, **kw):
    path = write_vocabulary(text)
    try:
        layer = L.IntegerLookup(vocabulary=path, **kw)
        layer(x)  # a table from a file may fail only when first used
    finally:
        os.unlink(path)


# Vocabulary files Keras (TensorFlow's text-file table) takes or refuses: name -> refused.
ref["vocabulary_files"] = {
    "missing": rejected(lambda: L.IntegerLookup(vocabulary="/nonexistent/vocabulary.txt")),
    "tf_idf": rejected(lambda: from_file("12\n36\n", output_mode="tf_idf", idf_weights=[1.0, 2.0])),
    "not_int": rejected(lambda: from_file("12\nseven\n")),
    "repeated": rejected(lambda: from_file("12\n36\n12\n")),
    "inner_empty_line": rejected(lambda: from_file("12\n\n36\n")),
    "final_empty_line": rejected(lambda: from_file("12\n36\n\n")),
    "empty": rejected(lambda: from_file("")),
}
ref["rejects"] = {
    "max_tokens_1": rejected(lambda: L.IntegerLookup(max_tokens=1)),
    "negative_oov": rejected(lambda: L.IntegerLookup(num_oov_indices=-1)),
    "invert_encoding": rejected(lambda: L.IntegerLookup(invert=True, output_mode="one_hot")),
    "bad_mode": rejected(lambda: L.IntegerLookup(output_mode="onehot")),
    "idf_without_tf_idf": rejected(lambda: L.IntegerLookup(vocabulary=vocab, idf_weights=[1.0] * 5)),
    "tf_idf_vocab_without_idf": rejected(lambda: L.IntegerLookup(vocabulary=vocab, output_mode="tf_idf")),
    "repeated": rejected(lambda: L.IntegerLookup(vocabulary=[1, 2, 1])),
    "mask_inside": rejected(lambda: L.IntegerLookup(vocabulary=[1, 0, 2], mask_token=0)),
    "too_many": rejected(lambda: L.IntegerLookup(vocabulary=[1, 2, 3, 4], max_tokens=4)),
    "empty": rejected(lambda: L.IntegerLookup(vocabulary=[])),
    "pad_without_max": rejected(lambda: L.IntegerLookup(pad_to_max_tokens=True)),
    "salt_floormod": rejected(lambda: L.IntegerLookup(salt=5)),
    "adapt_given": rejected(adapt_given),
    "resize_after_call": rejected(resize_after_call),
    "idf_length": rejected(lambda: L.IntegerLookup(vocabulary=vocab, output_mode="tf_idf", idf_weights=[1.0])),
}
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "keras_lookup.json"), "w") as f:
    json.dump(ref, f)
print("wrote", len(cases), "cases;", ref["rejects"])
