"""The `safetensors` package's API, on tensorfile: code written for safetensors runs on
tensorfile with one import changed.

    import tensorfile.safetensors as safetensors
    from tensorfile.safetensors import safe_open
    from tensorfile.safetensors.torch import load_file, save_file   # and .numpy

Files are read and written by tensorfile's library: what `save`/`save_file` write is byte for
byte what safetensors writes of the same tensors; `safe_open` opens any format tensorfile
reads (and URLs). Where safetensors writes a wrong file, this refuses or writes the right one:
a transposed or strided numpy array is saved in its logical order, a negated or conjugated
torch view is refused. docs/python.md lists the differences.
"""

from ._common import SafetensorError
from ._open import _safe_open_handle, safe_open
from ._write import TensorSpec, deserialize, serialize, serialize_file

# The version of safetensors' API this follows (what code that checks it asks).
__version__ = "0.8.0"

__all__ = [
    "SafetensorError", "TensorSpec", "__version__", "deserialize", "safe_open", "serialize", "serialize_file",
]
