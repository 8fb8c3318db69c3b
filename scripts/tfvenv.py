"""The virtual environment, kept outside the repository, in which `scripts/fixtures` and
`scripts/interop` run the real reference tools."""

import argparse
import os
import subprocess
import sys
from pathlib import Path

DEFAULT_VENV = Path.home() / ".cache" / "tensorfile" / "venv"
# The second environment, with torch 2.8, for `.pt2` archives in the layout before 2.9.
TORCH28_VENV = Path.home() / ".cache" / "tensorfile" / "venv-torch28"
TORCH28_PACKAGES = ["torch==2.8.*", "numpy", "ml_dtypes", "safetensors"]
# pip ztensor 2.x (zTensor 2 files), which cannot share an environment with ztensor 0.1.4.
ZT2_VENV = Path.home() / ".cache" / "tensorfile" / "venv-zt2"
ZT2_PACKAGES = ["ztensor==2.1.2", "numpy", "ml_dtypes", "safetensors"]
# pip ztensor 1.x (zTensor 1 files, `ZTEN1000`), also in an environment of its own.
ZT1_VENV = Path.home() / ".cache" / "tensorfile" / "venv-zt1"
ZT1_PACKAGES = ["ztensor==1.2.3", "numpy", "ml_dtypes", "safetensors"]
# gguf-py, which makes the GGUF files the zTensor 2 fixtures convert.
GGUF_VENV = Path.home() / ".cache" / "tensorfile" / "venv-gguf"
GGUF_PACKAGES = ["gguf==0.19.0", "numpy"]
# The Run:ai Model Streamer (the remote benchmark's peer). It needs torch: rather than another
# torch, its packages and theirs but torch and numpy go into a folder put on the path of this
# environment's python (one pip command: both wheels fill the folder runai_model_streamer).
RUNAI_DIR = Path.home() / ".cache" / "tensorfile" / "runai-0.17"
RUNAI_PACKAGES = ["runai-model-streamer==0.17.*", "runai-model-streamer-s3==0.17.*", "humanize", "boto3",
                  "botocore", "s3transfer", "jmespath", "python-dateutil", "six", "urllib3"]

# Enough for the zTensor and numpy-safetensors fixtures and the interop tests.
LIGHT_PACKAGES = [
    "ztensor==0.1.4",
    "safetensors",
    "numpy",
    "ml_dtypes",
    "pytest",
    "gguf==0.19.0",
    "onnx==1.23.2",
    "onnxruntime==1.32.0",
    "h5py==3.16.0",
    # safetensors' own tests of file handles (scripts/safetensors-suite).
    "fsspec",
]
FULL_PACKAGES = ["torch", *LIGHT_PACKAGES]
# Besides the light set, for `scripts/interop --real` (MATLAB v5 files read with scipy.io.loadmat).
REAL_PACKAGES = ["scipy"]
# Wanted by later fixtures; a failure to install them is only warned about.
OPTIONAL_PACKAGES = ["executorch==1.5.1", "torchvision", "huggingface_hub", "keras"]


def add_venv_argument(parser: argparse.ArgumentParser) -> None:
    default = Path(os.environ.get("TENSORFILE_VENV", DEFAULT_VENV)).expanduser()
    parser.add_argument(
        "--venv",
        type=Path,
        default=default,
        help=f"virtual environment to create or reuse (default: $TENSORFILE_VENV or {DEFAULT_VENV})",
    )


def python(venv: Path) -> Path:
    return venv / "bin" / "python"


def is_active(venv: Path) -> bool:
    """Whether this interpreter is the one of `venv`."""
    return Path(sys.prefix).resolve() == venv.resolve()


def ensure(venv: Path, light: bool) -> None:
    """Creates `venv` if needed and installs the tools into it (pip skips what is there)."""
    if not python(venv).exists():
        print(f"creating virtual environment {venv}", flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip_install(venv, LIGHT_PACKAGES if light else FULL_PACKAGES)
    if light:
        return
    for package in OPTIONAL_PACKAGES:
        try:
            pip_install(venv, [package])
        except subprocess.CalledProcessError:
            print(f"warning: could not install {package}; going on without it", file=sys.stderr)


def ensure_torch28(venv: Path) -> bool:
    """Creates or updates the torch 2.8 environment; False (with a warning) if it fails."""
    return ensure_side(venv, TORCH28_PACKAGES)


def ensure_side(venv: Path, packages: list[str]) -> bool:
    """Creates or updates a side environment (torch 2.8, zTensor 1 and 2, gguf-py); False
    (with a warning) if it fails."""
    try:
        if not python(venv).exists():
            print(f"creating virtual environment {venv}", flush=True)
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        pip_install(venv, packages)
        return True
    except subprocess.CalledProcessError:
        print(f"warning: could not install {' '.join(packages)} into {venv}", file=sys.stderr)
        return False


def pip_install(venv: Path, packages: list[str]) -> None:
    print(f"pip install {' '.join(packages)}", flush=True)
    command = [str(python(venv)), "-m", "pip", "install", "--disable-pip-version-check", *packages]
    subprocess.run(command, check=True)


def ensure_target(target: Path, packages: list[str]) -> bool:
    """`packages` (without their dependencies) installed into the folder `target`, once, for
    this interpreter; False (with a warning) if it fails (soon, without a network: one retry;
    pip's PIP_NO_INDEX and PIP_FIND_LINKS point it at wheels brought along instead)."""
    done = target / ".installed"
    if done.exists() and done.read_text() == " ".join(packages):
        return True
    print(f"pip install --target {target} {' '.join(packages)}", flush=True)
    command = [sys.executable, "-m", "pip", "install", "--disable-pip-version-check", "--no-deps", "--upgrade",
               "--retries", "1", "--timeout", "10", "--target", str(target), *packages]
    if subprocess.run(command).returncode != 0:
        print(f"warning: could not install {' '.join(packages)} into {target}", file=sys.stderr)
        return False
    done.write_text(" ".join(packages))
    return True
