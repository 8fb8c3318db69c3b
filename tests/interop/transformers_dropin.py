"""Run by test_transformers_dropin.py in a fresh interpreter: transformers with
`tensorfile.safetensors` in the place of `safetensors` (put there before transformers is
imported; the real package never imported). It saves a tiny Llama with `save_pretrained`,
loads it with `from_pretrained`, takes one optimizer step on the loaded model, and prints
JSON of what it saw.

    transformers_dropin.py FOLDER    the model saved into FOLDER, its state dict beside it
                                     (expected.pt) for the test to compare
"""

import hashlib
import json
import sys
from pathlib import Path

assert not any(m == "safetensors" or m.startswith("safetensors.") for m in sys.modules)
import tensorfile.safetensors  # noqa: E402
import tensorfile.safetensors.numpy  # noqa: E402
import tensorfile.safetensors.torch  # noqa: E402

sys.modules["safetensors"] = tensorfile.safetensors
sys.modules["safetensors.numpy"] = tensorfile.safetensors.numpy
sys.modules["safetensors.torch"] = tensorfile.safetensors.torch
for other in ("_safetensors_rust", "flax", "mlx", "paddle", "tensorflow"):
    sys.modules[f"safetensors.{other}"] = None

import torch  # noqa: E402
import transformers  # noqa: E402


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main(folder: Path) -> dict:
    torch.manual_seed(0)
    config = transformers.LlamaConfig(
        hidden_size=16, intermediate_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        vocab_size=64, max_position_embeddings=32,
    )
    model = transformers.LlamaForCausalLM(config)
    model.save_pretrained(folder)
    torch.save(model.state_dict(), folder / "expected.pt")
    weights = folder / "model.safetensors"
    before = sha256(weights)

    loaded = transformers.LlamaForCausalLM.from_pretrained(folder)
    same = {name: torch.equal(p, model.state_dict()[name]) for name, p in loaded.state_dict().items()}

    ids = torch.randint(0, config.vocab_size, (2, 8))
    optimizer = torch.optim.AdamW(loaded.parameters(), lr=1e-2)
    loss = loaded(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    changed = [name for name, p in loaded.named_parameters() if not torch.equal(p, model.state_dict()[name])]
    real = [
        name
        for name, module in sys.modules.items()
        if name.startswith("safetensors") and module is not None and "tensorfile" not in module.__name__
    ]
    return {
        "safetensors": sys.modules["safetensors"].__name__,
        "files": sorted(p.name for p in folder.iterdir()),
        "same": same,
        "loss": float(loss),
        "changed": changed,
        "parameters": [name for name, _ in loaded.named_parameters()],
        "file_unchanged": sha256(weights) == before,
        "real_safetensors_modules": real,
    }


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
