"""What tf.data.experimental.make_csv_dataset and CsvDataset give for small CSV files, for tests/pipeline/test_csv.cpp:
`python3 tests/pipeline/make_csv_reference.py` (pip tensorflow-cpu) writes the files under tests/data/csv/ and
tests/data/csv_reference.json, each case's options and TensorFlow's batches (dtypes and values) or its error.
Every case reads its files in order (num_epochs=1, shuffle=False)."""
import gzip
import json
import math
import os
import zlib

import tensorflow as tf

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.join(here, "..", "data", "csv")
os.makedirs(root, exist_ok=True)
DTYPES = {"int32": tf.int32, "int64": tf.int64, "float32": tf.float32, "float64": tf.float64}


def write(name, text, compression=None):
    data = text.encode() if isinstance(text, str) else text
    if compression == "GZIP":
        data = gzip.compress(data, mtime=0)
    elif compression == "ZLIB":
        data = zlib.compress(data)
    with open(os.path.join(root, name), "wb") as f:
        f.write(data)
    return name


def value(x):
    return x if isinstance(x, (int, str)) or math.isfinite(x) else repr(float(x))


def column(t):
    if t.dtype == tf.string:
        return {"dtype": "string", "values": [v.decode() for v in t.numpy().tolist()]}
    return {"dtype": t.dtype.name, "values": [value(v) for v in t.numpy().tolist()]}


def tf_defaults(defaults):
    # JSON: {"dtype": d} (a required column) or {"dtype": d, "value": v}.
    return [DTYPES[d["dtype"]] if "value" not in d else tf.constant([d["value"]], DTYPES[d["dtype"]]) for d in defaults]


cases = []


def case(name, files, **options):
    kw = dict(options)
    if "column_defaults" in kw:
        kw["column_defaults"] = tf_defaults(kw["column_defaults"])
    kw.setdefault("batch_size", 4)
    out = {"name": name, "files": files, "options": options}
    try:
        batches = []
        dataset = tf.data.experimental.make_csv_dataset(
            [os.path.join(root, f) for f in files], num_epochs=1, shuffle=False, **kw)
        for b in dataset:
            features, label = b if isinstance(b, tuple) else (b, None)
            batches.append({"features": {k: column(v) for k, v in features.items()},
                            "label": column(label) if label is not None else None})
        out["batches"] = batches
    except Exception as e:  # TensorFlow's error: the test expects Osprey's ValueError
        out["error"] = type(e).__name__ + ": " + str(e).splitlines()[0][:200]
    cases.append(out)


case("types", [write("types.csv", "i32,i64,f32,f64,frac\n1,3000000000,1.5,1e39,12.0\n-2,4,2,3,7\n+5,-0,1e3,2,8\n")])
case("missing_fields_are_zero", [write("missing.csv", "a,b\n1,\n,2.5\n")])
case("na_value", [write("na.csv", "a,b\nNA,1\n2,NA\n3,4\n")], na_value="NA")
case("na_value_required", [write("na.csv", "a,b\nNA,1\n2,NA\n3,4\n")], na_value="NA",
     column_defaults=[{"dtype": "int32"}, {"dtype": "int32", "value": 0}])
case("quoted", [write("quoted.csv", 'a,b\n"1","2.5"\n" 3 ",4\n"5","6"\n')])
case("quoted_delimiter", [write("quoted_delim.csv", 'a,"b,c",d\n1,2,3\n"4",5,"6"\n')], select_columns=["a", "d"])
case("quote_inside_unquoted", [write("quote_inside.csv", 'a,b\n1,2\n1"2,3\n')],
     column_defaults=[{"dtype": "int32", "value": 0}] * 2)
case("text_after_quote", [write("after_quote.csv", 'a,b\n1,2\n"1"2,3\n')],
     column_defaults=[{"dtype": "int32", "value": 0}] * 2)
case("quoted_line_break", [write("line_break.csv", 'a,b\n1,"2\n"\n3,4\n')],
     column_defaults=[{"dtype": "int32", "value": 0}] * 2)
case("quotes_off", [write("quotes_off.csv", 'a,b\n1,2\n"3",4\n')], use_quote_delim=False,
     column_defaults=[{"dtype": "int32", "value": 0}] * 2)
case("spaces_around_numbers", [write("spaces.csv", "a,b\n 12 ,1\n3, 4.5 \n")])
case("crlf", [write("crlf.csv", "a,b\r\n1,2\r\n3,4\r\n")])
case("tabs", [write("tabs.tsv", "a\tb\n1\t2.5\n3\t4\n")], field_delim="\t")
case("ignore_errors", [write("errors.csv", "a,b\n1,2\n3,4\n5\nx,6\n7.5,8\n9,10\n,11\n")], ignore_errors=True,
     batch_size=8, column_defaults=[{"dtype": "int32"}, {"dtype": "int32"}])
case("errors_raise", [write("errors.csv", "a,b\n1,2\n3,4\n5\nx,6\n7.5,8\n9,10\n,11\n")], batch_size=8,
     column_defaults=[{"dtype": "int32", "value": 0}] * 2)
case("fraction_in_int_default_column", [write("fraction.csv", "a,b\n1,2\n3.5,4\n")],
     column_defaults=[{"dtype": "int32", "value": 0}] * 2)
case("float_default", [write("float_default.csv", "a,b\n1,2\n3,4\n")],
     column_defaults=[{"dtype": "float32", "value": 0.5}, {"dtype": "int32", "value": 0}])
case("int64_and_float64_defaults", [write("wide.csv", "a,b\n1,2.25\n,\n")],
     column_defaults=[{"dtype": "int64", "value": -9}, {"dtype": "float64", "value": 0.125}])
case("nan_and_inf_with_defaults", [write("nan.csv", "a,b\nnan,1\ninf,2\n-inf,3\n")],
     column_defaults=[{"dtype": "float32", "value": 0.0}, {"dtype": "int32", "value": 0}])
case("quoted_empty_is_missing", [write("quoted_empty.csv", 'a,b\n"",1\n2,3\n')],
     column_defaults=[{"dtype": "int32", "value": -7}, {"dtype": "int32", "value": 0}])
case("select_by_index", [write("abc.csv", "a,b,c\n1,2,3\n4,5,6\n")], select_columns=[2, 0])
case("select_mixed_with_label", [write("abc.csv", "a,b,c\n1,2,3\n4,5,6\n")], select_columns=[2, "a"], label_name="c")
case("select_defaults_per_selected", [write("abc.csv", "a,b,c\n1,2,3\n4,5,6\n")], select_columns=["c", "a"],
     column_defaults=[{"dtype": "float32", "value": 0.0}, {"dtype": "int64", "value": 0}])
case("select_skips_text", [write("text.csv", "name,x\nbob,1\nann,2\n")], select_columns=["x"])
case("text_column", [write("text.csv", "name,x\nbob,1\nann,2\n")])
case("select_duplicate", [write("abc.csv", "a,b,c\n1,2,3\n4,5,6\n")], select_columns=[0, "a"])
case("select_out_of_range", [write("abc.csv", "a,b,c\n1,2,3\n4,5,6\n")], select_columns=[3])
case("label_not_selected", [write("abc.csv", "a,b,c\n1,2,3\n4,5,6\n")], select_columns=["a"], label_name="c")
case("duplicate_header", [write("dup.csv", "a,a\n1,2\n")])
case("no_header", [write("no_header.csv", "1,2.5\n3,4\n")], header=False, column_names=["x", "y"])
case("gzip", [write("g.csv.gz", "a,b\n1,2.5\n3,4\n", "GZIP")], compression_type="GZIP")
case("gzip_members", [write("members.csv.gz", gzip.compress(b"a,b\n1,2\n", mtime=0) + gzip.compress(b"3,4\n", mtime=0))],
     compression_type="GZIP")
case("zlib", [write("z.csv.zz", "a,b\n1,2.5\n3,4\n", "ZLIB")], compression_type="ZLIB", column_names=["a", "b"],
     column_defaults=[{"dtype": "int32", "value": 0}, {"dtype": "float32", "value": 0.0}])
case("zlib_types_inferred", [write("z.csv.zz", "a,b\n1,2.5\n3,4\n", "ZLIB")], compression_type="ZLIB")
case("gzip_truncated", [write("truncated.csv.gz", gzip.compress(b"a,b\n1,2\n3,4\n5,6\n", mtime=0)[:-12])],
     compression_type="GZIP", column_defaults=[{"dtype": "int32", "value": 0}] * 2)
case("unknown_compression", [write("plain.csv", "a\n1\n")], compression_type="BZIP2")
case("blank_line", [write("blank.csv", "a,b\n1,2\n\n3,4\n")])
case("ragged_row_while_inferring", [write("ragged.csv", "a,b\n1,2\n3\n4,5\n")], ignore_errors=True)

# tf.data.experimental.CsvDataset: one tuple of scalars per record.
dataset_cases = []


def dataset_case(name, files, record_defaults, **options):
    out = {"name": name, "files": files, "record_defaults": record_defaults, "options": options}
    try:
        d = tf.data.experimental.CsvDataset([os.path.join(root, f) for f in files], tf_defaults(record_defaults),
                                            **options)
        out["records"] = [[{"dtype": v.dtype.name, "value": value(v.numpy().item())} for v in r] for r in d]
    except Exception as e:
        out["error"] = type(e).__name__ + ": " + str(e).splitlines()[0][:200]
    dataset_cases.append(out)


i32 = {"dtype": "int32", "value": 0}
dataset_case("all_fields", [write("plain3.csv", "1,2,3\n4,5,6\n")], [i32, {"dtype": "float32", "value": 0.0}, i32])
dataset_case("header_and_na", [write("na3.csv", "x,y\n1,NA\n,2\n")], [{"dtype": "int64", "value": -1}, i32],
             header=True, na_value="NA")
dataset_case("select_cols_ignores_later_fields", [write("ragged3.csv", "a,b,c\n1,2,3\n4,5,6,7\n8,9\n")], [i32, i32],
             header=True, select_cols=[0, 1])
dataset_case("select_cols_needs_its_fields", [write("ragged3.csv", "a,b,c\n1,2,3\n4,5,6,7\n8,9\n")], [i32, i32],
             header=True, select_cols=[0, 2])
dataset_case("select_cols_types", [write("plain3.csv", "1,2,3\n4,5,6\n")], [i32, {"dtype": "float64", "value": 0.0}],
             select_cols=[0, 2])
dataset_case("exclude_cols", [write("plain3.csv", "1,2,3\n4,5,6\n")], [i32, i32], exclude_cols=[1])
dataset_case("too_many_fields", [write("ragged3.csv", "a,b,c\n1,2,3\n4,5,6,7\n8,9\n")], [i32, i32, i32],
             header=True)
dataset_case("select_and_exclude", [write("plain3.csv", "1,2,3\n4,5,6\n")], [i32], select_cols=[0], exclude_cols=[1])
dataset_case("select_unsorted", [write("plain3.csv", "1,2,3\n4,5,6\n")], [i32, i32], select_cols=[2, 0])
dataset_case("required_missing", [write("gap3.csv", "1,,3\n")], [i32, {"dtype": "int32"}, i32])
dataset_case("gzip", [write("plain3.csv.gz", "1,2,3\n4,5,6\n", "GZIP")], [i32, i32, i32], compression_type="GZIP")

with open(os.path.join(here, "..", "data", "csv_reference.json"), "w") as f:
    json.dump({"tensorflow": tf.__version__, "cases": cases, "dataset_cases": dataset_cases}, f, indent=1)
    f.write("\n")
print(f"{len(cases)} make_csv_dataset cases, {len(dataset_cases)} CsvDataset cases, TensorFlow {tf.__version__}")
