#!/usr/bin/env python3
"""Manual cross-check of gtpo's safetensors reader/writer against an independent implementation.

Needs only the Python standard library and numpy. When Hugging Face's `safetensors` package is importable it is
used as well, so the check is against HF's own code rather than against this file's reading of the format.

  safetensors_check.py write OUT.safetensors   write the fixture below (HF layout; also via HF if importable,
                                               and then check both files are byte-identical)
  safetensors_check.py dump FILE.safetensors   print every tensor (dtype, shape, values as float) and the metadata
                                               as JSON, read by HF if importable, else by the reader below
  safetensors_check.py compare A B             exit 1 unless A and B hold the same tensors and metadata

Typical round: write a fixture here, load it with gtpo and write it back, then `compare` (and `cmp`) the two files.
The C++ tests do not need this script.
"""
import json
import struct
import sys

import numpy as np

# HF's Dtype enum order (increasing alignment); its writer lays tensors out by descending order, then name.
DTYPE_ORDER = ["BOOL", "U8", "I8", "F8_E5M2", "F8_E4M3", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64",
               "I64", "U64"]
NUMPY_OF = {"BOOL": np.bool_, "U8": np.uint8, "I8": np.int8, "I16": np.int16, "U16": np.uint16, "F16": np.float16,
            "BF16": np.uint16, "I32": np.int32, "U32": np.uint32, "F32": np.float32, "F64": np.float64,
            "I64": np.int64, "U64": np.uint64}
DTYPE_OF = {np.dtype(v).str: k for k, v in NUMPY_OF.items() if k != "BF16"}


def bf16_bits(values):
    """float32 -> bfloat16 bit patterns, round to nearest even (NaN handling is not needed for the fixture)."""
    bits = np.asarray(values, dtype="<f4").view("<u4").astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")


def fixture():
    """name -> (dtype, numpy array holding the little-endian element values or bit patterns)."""
    return {
        "embed.weight": ("F32", (np.arange(15, dtype="<f4") * 0.5 - 1.0).reshape(3, 5)),
        "half": ("F16", np.array([[0.1, -2.0, 65504.0], [6e-8, 1.0, -0.0]], dtype="<f2")),
        "bf": ("BF16", bf16_bits([1.0, -0.5, 3.14159265, 1e-3])),
        "ids": ("I64", np.array([[1, -2], [3, 2**40]], dtype="<i8")),
        "mask": ("BOOL", np.array([True, False, True])),
        "scalar": ("F64", np.array(0.1, dtype="<f8")),
        "empty": ("F32", np.zeros((0, 4), dtype="<f4")),
        "layer.0.b": ("I8", np.array([-128, 0, 127], dtype="i1")),
    }


def serialize(tensors, metadata):
    """The file bytes exactly as HF's writer produces them: metadata first, compact JSON, space-padded to 8."""
    order = sorted(tensors, key=lambda n: (-DTYPE_ORDER.index(tensors[n][0]), n))
    header, offset, chunks = {}, 0, []
    if metadata:
        header["__metadata__"] = dict(sorted(metadata.items()))
    for name in order:
        dtype, array = tensors[name]
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        chunks.append(data)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def read_own(path):
    """name -> (dtype, array), metadata; a minimal reader with the format's main checks."""
    blob = open(path, "rb").read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    metadata = header.pop("__metadata__", {})
    data = blob[8 + n:]
    tensors, end = {}, 0
    for name, info in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, stop = info["data_offsets"]
        assert begin == end, f"{name}: hole or overlap at {begin}"
        end = stop
        array = np.frombuffer(data[begin:stop], dtype=np.dtype(NUMPY_OF[info["dtype"]]).newbyteorder("<"))
        tensors[name] = (info["dtype"], array.reshape(info["shape"]))
    assert end == len(data), "tensors do not cover the data buffer"
    return tensors, metadata


def read_hf(path):
    from safetensors import safe_open
    tensors = {}
    with safe_open(path, framework="numpy") as f:
        metadata = f.metadata() or {}
        for name in f.keys():
            sl = f.get_slice(name)
            dtype = sl.get_dtype()
            if dtype == "BF16":  # numpy has no bfloat16: take the raw bits from HF's own parse of the header
                tensors[name] = (dtype, None)
            else:
                tensors[name] = (dtype, f.get_tensor(name))
    if any(a is None for _, a in tensors.values()):
        own, _ = read_own(path)
        tensors = {k: (d, own[k][1] if a is None else a) for k, (d, a) in tensors.items()}
    return tensors, metadata


def have_hf():
    try:
        import safetensors  # noqa: F401
        return True
    except ImportError:
        return False


def read(path):
    return read_hf(path) if have_hf() else read_own(path)


def as_float(dtype, array):
    if dtype == "BF16":
        return (array.astype("<u4") << 16).view("<f4").astype(np.float64)
    return array.astype(np.float64)


def main(argv):
    if len(argv) == 3 and argv[1] == "write":
        tensors, metadata = fixture(), {"format": "pt"}
        blob = serialize(tensors, metadata)
        open(argv[2], "wb").write(blob)
        if have_hf():
            from safetensors.numpy import save
            hf = save({n: a for n, (d, a) in tensors.items() if d != "BF16"}, metadata=metadata)
            mine = serialize({n: v for n, v in tensors.items() if v[0] != "BF16"}, metadata)
            print("HF save() byte-identical to this writer (without BF16, which numpy lacks):", hf == mine)
            if hf != mine:
                return 1
        print(f"wrote {argv[2]} ({len(blob)} bytes)")
        return 0
    if len(argv) == 3 and argv[1] == "dump":
        tensors, metadata = read(argv[2])
        out = {"reader": "huggingface" if have_hf() else "own", "metadata": metadata, "tensors": {
            n: {"dtype": d, "shape": list(a.shape), "values": as_float(d, a).ravel().tolist()}
            for n, (d, a) in sorted(tensors.items())}}
        print(json.dumps(out, indent=1))
        return 0
    if len(argv) == 4 and argv[1] == "compare":
        (ta, ma), (tb, mb) = read(argv[2]), read(argv[3])
        same = ma == mb and ta.keys() == tb.keys() and all(
            ta[n][0] == tb[n][0] and ta[n][1].shape == tb[n][1].shape and ta[n][1].tobytes() == tb[n][1].tobytes()
            for n in ta)
        print("same tensors and metadata" if same else "DIFFERENT")
        return 0 if same else 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
