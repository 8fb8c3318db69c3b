"""Reference statistics of held tensors of every dtype, computed by numpy in float64.

`tests/fixtures/stats/special.safetensors` (made here with torch) holds values that trouble
summaries: NaNs, infinities, signed zeros, float32's extremes, a subnormal, a float64 tensor
of mean 1e8 and standard deviation 1 (a sum of squares loses it all), tensors large enough to
be cut into several pieces, an all-NaN and an empty tensor. `records.json` holds, per file
(that one and existing fixtures covering every dtype: safetensors, NumPy, ONNX's storage
types read by onnx.numpy_helper, GGUF's quantized tensors dequantized by gguf-py), per
tensor: `numel`, and over the finite values `min`, `max`, `mean`, `std` (population),
`absmax`, the counts `zeros`, `nan`, `posinf`, `neginf`, and `numpy.histogram`'s `edges` and
`counts` with HIST_BINS bins; or `summarised: false` for complex tensors.

Runs in the full environment (torch, safetensors, numpy, ml_dtypes, onnx); the GGUF values
come from the gguf environment (`python -m fixturegen.stats_records gguf FILE OUT.npz` there).
"""

import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HIST_BINS = 10
RECORD = "records.json"

SAFETENSORS = ["safetensors/dtypes.safetensors", "safetensors/scalar.safetensors", "safetensors/zero_size.safetensors"]
NUMPY = ["numpy/be_int64.npy", "numpy/le_uint64.npy", "numpy/be_float16.npy", "numpy/le_bool.npy",
         "numpy/fortran_f8.npy", "numpy/le_uint16.npy", "numpy/le_int8.npy", "numpy/le_complex64.npy"]
ONNX = ["onnx/storage.onnx"]
GGUF = ["gguf/blocks.gguf", "gguf/big_endian.gguf"]


def special(path: Path) -> None:
    """The tensors that trouble summaries, written by safetensors.torch."""
    import torch
    from safetensors.torch import save_file

    g = torch.Generator().manual_seed(18)
    nan, inf = float("nan"), float("inf")
    f32_max = torch.finfo(torch.float32).max
    specials = [1.5, nan, inf, -inf, -0.0, 0.0, f32_max, -f32_max, 1e-45, 2.0, nan, 0.25]
    large_bf16 = (torch.randn(600_000, generator=g) * 0.02).to(torch.bfloat16)
    large_bf16[12345] = inf
    large_bf16[400_001] = nan
    tensors = {
        "specials_f32": torch.tensor(specials, dtype=torch.float32),
        "specials_bf16": torch.tensor(specials[:6] + [3.0e38, -1.0], dtype=torch.bfloat16),
        "specials_f16": torch.tensor([65504.0, -65504.0, 6e-8, nan, -inf, -0.0], dtype=torch.float16),
        # Mean 1e8, standard deviation 1: E[x^2] - E[x]^2 cancels every digit.
        "mean_1e8_std_1": 1e8 + torch.randn(20_000, generator=g, dtype=torch.float64),
        "large_bf16": large_bf16.reshape(600, 1000),
        "large_f32": (torch.randn(100_000, generator=g) * 3.0 + 10.0).reshape(100, 1000),
        "all_nan": torch.full((3,), nan, dtype=torch.float16),
        "constant": torch.full((5,), 7.0, dtype=torch.float32),
        "empty": torch.zeros((0, 4), dtype=torch.float32),
        "int64_beyond_2_53": torch.tensor([2**62, -(2**62), 2**53 + 1, 0, 3], dtype=torch.int64),
        "bools": torch.tensor([True, False, True, True]),
    }
    save_file(tensors, str(path))


def summary(name: str, dtype: str, values: np.ndarray) -> dict:
    a = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = a[np.isfinite(a)]
    record = {"name": name, "dtype": dtype, "numel": int(a.size), "summarised": True,
              "zeros": int(np.count_nonzero(a == 0)), "nan": int(np.count_nonzero(np.isnan(a))),
              "posinf": int(np.count_nonzero(a == np.inf)), "neginf": int(np.count_nonzero(a == -np.inf))}
    if finite.size == 0:
        record.update(min=None, max=None, mean=None, std=None, absmax=None, hist=None)
        return record
    try:
        counts, edges = np.histogram(finite, bins=HIST_BINS)
        hist = {"edges": [float(e) for e in edges], "counts": [int(c) for c in counts]}
    except ValueError:
        hist = None  # no HIST_BINS bins of some width in float64 (one value beyond 2^53)
    record.update(min=float(finite.min()), max=float(finite.max()), mean=float(finite.mean()),
                  std=float(finite.std()), absmax=float(np.abs(finite).max()), hist=hist)
    return record


def not_summarised(name: str, dtype: str, numel: int) -> dict:
    return {"name": name, "dtype": dtype, "numel": numel, "summarised": False}


def safetensors_records(path: Path) -> list:
    import torch
    from safetensors import safe_open

    out = []
    with safe_open(str(path), framework="pt") as f:
        for name in f.keys():
            t = f.get_tensor(name)
            dtype = str(t.dtype).removeprefix("torch.")
            if t.is_complex():
                out.append(not_summarised(name, dtype, t.numel()))
            else:
                out.append(summary(name, dtype, t.to(torch.float64).numpy()))
    return out


def numpy_records(path: Path) -> list:
    a = np.load(path)
    if np.iscomplexobj(a):
        return [not_summarised("", str(a.dtype), int(a.size))]
    return [summary("", str(a.dtype), a.astype(np.float64))]


def onnx_records(path: Path) -> list:
    import onnx
    from onnx import numpy_helper

    model = onnx.load(str(path), load_external_data=False)
    out = []
    for init in model.graph.initializer:
        try:
            a = numpy_helper.to_array(init)
        except Exception as e:  # noqa: BLE001 (types numpy_helper cannot read are left out)
            print(f"stats records: {path.name}: {init.name} left out ({e})", file=sys.stderr)
            continue
        dtype = onnx.helper.tensor_dtype_to_np_dtype(init.data_type).name
        if np.iscomplexobj(a):
            out.append(not_summarised(init.name, dtype, int(a.size)))
        elif a.dtype.kind in "biufV" or a.dtype.name.startswith(("float", "int", "uint", "bfloat")):
            try:
                values = a.astype(np.float64)
            except (TypeError, ValueError):
                continue
            out.append(summary(init.name, dtype, values))
    return out


def gguf_values(path: Path, out: Path) -> None:
    """In the gguf environment: every tensor of `path` as gguf-py reads it, quantized ones
    dequantized by gguf.quants.dequantize, saved as float64 into the .npz `out` (by index, with
    the names in `names`)."""
    from gguf import GGMLQuantizationType, GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(str(path))
    arrays, names, types = {}, [], []
    for t in reader.tensors:
        qtype = GGMLQuantizationType(t.tensor_type)
        if qtype in (GGMLQuantizationType.F32, GGMLQuantizationType.F16, GGMLQuantizationType.F64,
                     GGMLQuantizationType.I8, GGMLQuantizationType.I16, GGMLQuantizationType.I32,
                     GGMLQuantizationType.I64):
            values = np.asarray(t.data).astype(np.float64)
        elif qtype == GGMLQuantizationType.BF16:
            # gguf-py hands bfloat16 over as bytes, in the file's byte order.
            order = ">" if reader.byte_order == "S" else "<"
            raw = np.asarray(t.data).view(f"{order}u2").astype(np.uint32) << 16
            values = raw.view(np.float32).astype(np.float64)
        else:
            try:
                values = dequantize(np.asarray(t.data), qtype).astype(np.float64)
            except NotImplementedError:
                continue  # a type gguf-py does not dequantize: no reference

        arrays[f"t{len(names)}"] = values.reshape(-1)
        names.append(t.name)
        types.append(qtype.name)
    np.savez(out, names=np.array(names), types=np.array(types), **arrays)


def gguf_records(path: Path, gguf_python: str, scripts: Path) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "values.npz"
        command = [gguf_python, "-m", "fixturegen.stats_records", "gguf", str(path), str(out)]
        subprocess.run(command, check=True, cwd=scripts)
        with np.load(out) as z:
            return [summary(str(n), str(ty).lower(), z[f"t{i}"]) for i, (n, ty) in enumerate(zip(z["names"], z["types"]))]


def generate(out: Path, fixtures: Path, gguf_python: "str | None") -> None:
    out.mkdir(parents=True, exist_ok=True)
    special(out / "special.safetensors")
    files = [("stats/special.safetensors", safetensors_records(out / "special.safetensors"))]
    files += [(f, safetensors_records(fixtures / f)) for f in SAFETENSORS]
    files += [(f, numpy_records(fixtures / f)) for f in NUMPY]
    files += [(f, onnx_records(fixtures / f)) for f in ONNX]
    if gguf_python is not None:
        scripts = Path(__file__).resolve().parents[1]
        files += [(f, gguf_records(fixtures / f, gguf_python, scripts)) for f in GGUF]
    record = {"hist_bins": HIST_BINS, "numpy": np.__version__,
              "files": [{"file": f, "tensors": tensors} for f, tensors in files]}
    (out / RECORD).write_text(json.dumps(record, indent=1, allow_nan=False) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "gguf":
        gguf_values(Path(sys.argv[2]), Path(sys.argv[3]))
    else:
        sys.exit(f"unknown operation {sys.argv[1]!r}")
