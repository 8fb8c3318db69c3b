"""`scripts/interop --real`: files that other projects publish as their own test data,
downloaded from the package registries (pinned by version and sha256, `sources.py`), checked
against the tensorfile binary tensor by tensor with each format's real reader (`hdf5.py`,
`numpy_files.py`, `onnx_files.py`, `gguf_files.py`), and counted (`check.py`)."""
