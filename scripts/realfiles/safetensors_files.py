"""safetensors files as the safetensors library reads them: into numpy, or, for the dtypes
numpy lacks (bfloat16, the float8 types), into torch and compared as their bytes."""

from pathlib import Path

import numpy as np

from reading import Raw, Reading


def read(path: Path) -> Reading:
    from safetensors import safe_open

    entries = {}
    with safe_open(path, "np") as f:
        names = list(f.keys())
        for name in names:
            try:
                entries[name] = np.asarray(f.get_tensor(name))
            except TypeError:
                entries[name] = None
    missing = [n for n, v in entries.items() if v is None]
    if missing:
        import torch

        with safe_open(path, "pt") as f:
            for name in missing:
                t = f.get_tensor(name).contiguous()
                entries[name] = Raw(str(t.dtype).removeprefix("torch."), t.view(torch.uint8).numpy().tobytes())
    return Reading("safetensors", entries)
