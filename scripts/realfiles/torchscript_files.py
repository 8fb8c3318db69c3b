"""TorchScript archives (`torch.jit.save`) as torch reads them: `torch.jit.load(path)
.state_dict()`, each tensor contiguous on the CPU as numpy (bfloat16, which numpy lacks, as its
bytes). Loading a TorchScript archive builds its classes from its code: torch does it here, in
the tools' environment, for the comparison only; tensorfile never runs it."""

from pathlib import Path

import numpy as np

from reading import Raw, Reading


def read(path: Path) -> Reading:
    import torch

    module = torch.jit.load(str(path), map_location="cpu")
    entries = {}
    for name, t in module.state_dict().items():
        t = t.detach().contiguous()
        if t.dtype == torch.bfloat16:
            entries[name] = Raw("bfloat16", t.view(torch.int16).numpy().tobytes())
        else:
            entries[name] = t.numpy()
    return Reading("torchscript", entries)
