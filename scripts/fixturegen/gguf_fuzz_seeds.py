"""Small seeds for the gguf_read fuzz target (fuzz/seeds/gguf/): every committed GGUF fixture
written again by gguf-py's writer, small. Its key/values kept with their types (arrays cut to
their first ARRAY_ITEMS elements, strings to STRING_CHARS characters: a 32,000-token vocabulary
becomes four), its byte order kept, and of its tensors the first of each ggml type, cut to one
block (or ELEMENTS elements of a plain type). A mutation of a 2 KiB file costs the reader a
fraction of one of a 1.5 MB fixture (of which the fuzzer's max-len keeps the first 32 KiB: the
vocabulary, never a tensor), while every value type, array nesting and ggml type of the
fixtures is still in some seed. Files over MAX_BYTES are left out.

Run alone (inside an environment with gguf-py):
  PYTHONPATH=scripts python -m fixturegen.gguf_fuzz_seeds fuzz/seeds/gguf tests/fixtures
"""

import hashlib
import shutil
import sys
from pathlib import Path

import numpy as np
from gguf import GGML_QUANT_SIZES, GGUFEndian, GGUFReader, GGUFValueType, GGUFWriter

MAX_BYTES = 8192
ARRAY_ITEMS = 4
STRING_CHARS = 64
ELEMENTS = 8
# Keys gguf-py's writer makes itself.
WRITER_KEYS = {"GGUF.version", "GGUF.tensor_count", "GGUF.kv_count", "general.architecture"}


def generate(out: Path, fixtures: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    seen: set[str] = set()
    written, skipped = 0, 0
    for path in sorted(fixtures.rglob("*.gguf")):
        try:
            reader = GGUFReader(path)
        except Exception:  # a fixture made to be refused
            skipped += 1
            continue
        data = small_copy(reader, out / "tmp.gguf")
        if data is None or len(data) > MAX_BYTES:
            skipped += 1
            continue
        digest = hashlib.sha256(data).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        stem = "--".join(path.relative_to(fixtures).with_suffix("").parts)
        (out / f"{stem}.gguf").write_bytes(data)
        written += 1
    (out / "tmp.gguf").unlink(missing_ok=True)
    print(f"gguf fuzz seeds: {written} files of at most {MAX_BYTES} bytes ({skipped} refused by gguf-py or over it)")


def cut(value):
    if isinstance(value, str):
        return value[:STRING_CHARS]
    if isinstance(value, list):
        return [cut(v) for v in value[:ARRAY_ITEMS]]
    return value


def small_copy(reader: GGUFReader, scratch: Path) -> bytes | None:
    arch = reader.fields.get("general.architecture")
    arch_name = arch.contents() if arch is not None else "llama"
    writer = GGUFWriter(scratch, arch_name, endianess=reader.endianess)
    for key, field in reader.fields.items():
        if key in WRITER_KEYS or key.startswith("GGUF."):
            continue
        if key == "general.alignment":
            writer.add_custom_alignment(int(field.contents()))
            continue
        types = field.types
        if types[0] == GGUFValueType.ARRAY and len(types) > 2:
            continue  # arrays of arrays: gguf-py's writer takes no sub-sub-type
        sub = types[1] if types[0] == GGUFValueType.ARRAY and len(types) > 1 else None
        if types[0] == GGUFValueType.ARRAY and sub is None:
            continue  # an empty array: gguf-py's writer refuses one
        try:
            writer.add_key_value(key, cut(field.contents()), types[0], sub_type=sub)
        except Exception:
            return None
    kinds = set()
    for t in reader.tensors:
        if t.tensor_type in kinds:
            continue
        kinds.add(t.tensor_type)
        block, type_size = GGML_QUANT_SIZES[t.tensor_type]
        raw = np.asarray(t.data).reshape(-1).view(np.uint8).tobytes()
        if block == 1:
            n = min(ELEMENTS, int(np.prod(t.shape)))
            data = np.frombuffer(raw[: n * type_size], dtype=np.uint8).reshape(1, n * type_size)
        else:
            data = np.frombuffer(raw[:type_size], dtype=np.uint8).reshape(1, type_size)
        writer.add_tensor(t.name, data, raw_dtype=t.tensor_type)
    try:
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
    except ValueError:  # a value gguf-py's writer does not take back
        return None
    finally:
        writer.close()
    return scratch.read_bytes()


if __name__ == "__main__":
    generate(Path(sys.argv[1]), Path(sys.argv[2]))
