"""`az://` objects read from Azurite, Azure's own storage emulator (npm `azurite`), which checks
every request's Shared Key signature as Azure does; the objects uploaded by Azure's own SDK
(PyPI `azure-storage-blob`). Credentials come from the environment as Azure's tools take them
(`AZURE_STORAGE_USE_EMULATOR`, `AZURITE_BLOB_STORAGE_URL`, `AZURE_STORAGE_ACCOUNT_KEY`).

Azurite's `azurite-blob` is found by `TENSORFILE_AZURITE` or on `PATH` (scripts/test installs
both pieces); without them the tests skip, unless `TENSORFILE_REQUIRE_SERVERS=1`.

GCS has no such test: the emulator on PyPI (`gcp-storage-emulator`) serves the JSON API only
and answers the XML API's `HEAD`, which a `gs://` read starts with, 501; `gs://` is read
against the remote tests' own server instead (crates/tensorfile/tests/remote.rs).
"""

import os
import shutil
import socket
import subprocess
import time

import numpy as np
import pytest

import tensorfile

# Azurite's documented development account (the same in every installation).
ACCOUNT = "devstoreaccount1"
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
CONTAINER = "models"


def _missing(what: str):
    if os.environ.get("TENSORFILE_REQUIRE_SERVERS") == "1":
        pytest.fail(f"{what} is needed for the Azurite tests (scripts/test installs it)")
    pytest.skip(f"{what} not installed")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def azurite(tmp_path_factory):
    exe = os.environ.get("TENSORFILE_AZURITE") or shutil.which("azurite-blob")
    if not exe or not os.path.exists(exe):
        _missing("Azurite (npm install azurite)")
    try:
        from azure.storage.blob import BlobServiceClient
    except ImportError:
        _missing("Azure's SDK (pip install azure-storage-blob)")
    port = _free_port()
    log = tmp_path_factory.mktemp("azurite") / "azurite.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [exe, "--inMemoryPersistence", "--disableTelemetry", "--blobHost", "127.0.0.1",
             "--blobPort", str(port), "--skipApiVersionCheck"],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"Azurite did not start: {log.read_text()}")
            time.sleep(0.1)
    endpoint = f"http://127.0.0.1:{port}"
    service = BlobServiceClient.from_connection_string(
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
        f"BlobEndpoint={endpoint}/{ACCOUNT};",
        # Files over 1 MiB sent as staged blocks of 1 MiB, as the SDK sends large files.
        max_single_put_size=1 << 20, max_block_size=1 << 20)
    container = service.create_container(CONTAINER)
    yield endpoint, container
    process.kill()
    process.wait()


@pytest.fixture
def azure_env(azurite, monkeypatch):
    endpoint, _ = azurite
    monkeypatch.setenv("AZURE_STORAGE_USE_EMULATOR", "true")
    monkeypatch.setenv("AZURITE_BLOB_STORAGE_URL", endpoint)
    monkeypatch.setenv("AZURE_ALLOW_HTTP", "true")
    monkeypatch.delenv("AZURE_STORAGE_ACCOUNT_KEY", raising=False)
    return monkeypatch


def _upload(azurite, tmp_path, name: str, tensors: dict) -> None:
    _, container = azurite
    path = tmp_path / name
    tensorfile.save_file(tensors, path)
    with open(path, "rb") as f:
        container.upload_blob(name, f, overwrite=True)


def _tensors(seed: int) -> dict:
    rng = np.random.default_rng(seed)
    # 12 MiB: read in several ranged, streamed parts; and small tensors fetched alone.
    return {
        "embed": rng.standard_normal((3 << 10, 1 << 10), dtype=np.float32),
        "norm": rng.standard_normal(64, dtype=np.float32),
        "ids": np.arange(17, dtype=np.int64),
    }


@pytest.mark.parametrize("ext", ["safetensors", "zt"])
def test_an_az_object_uploaded_by_azures_sdk_loads_from_azurite(azurite, azure_env, tmp_path, ext):
    tensors = _tensors(3)
    _upload(azurite, tmp_path, f"model.{ext}", tensors)
    url = f"az://{CONTAINER}/model.{ext}"
    loaded = tensorfile.load_file(url)
    assert sorted(loaded) == sorted(tensors)
    for name, array in tensors.items():
        np.testing.assert_array_equal(loaded[name], array)
    with tensorfile.open(url) as f:
        assert sorted(f) == sorted(tensors)
        np.testing.assert_array_equal(f["embed"].numpy()[5:9], tensors["embed"][5:9])


def test_a_wrong_account_key_is_refused_by_azurite_and_named(azurite, azure_env, tmp_path):
    _upload(azurite, tmp_path, "keyed.safetensors", _tensors(4))
    url = f"az://{CONTAINER}/keyed.safetensors"
    # Signed with another key (Azurite checks the signature): refused, the URL named; no retry
    # turns a refusal into a wait.
    azure_env.setenv("AZURE_STORAGE_ACCOUNT_KEY", "d3Jvbmcta2V5LXdyb25nLWtleS13cm9uZy1rZXk=")
    start = time.monotonic()
    with pytest.raises(tensorfile.Error) as caught:
        tensorfile.load_file(url)
    assert url in str(caught.value)
    assert "403" in str(caught.value) or "privileges" in str(caught.value)
    assert time.monotonic() - start < 30


def test_a_missing_az_object_is_named(azurite, azure_env):
    url = f"az://{CONTAINER}/missing.safetensors"
    with pytest.raises(tensorfile.FileError) as caught:
        tensorfile.open(url)
    assert url in str(caught.value)
