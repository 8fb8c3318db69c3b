"""safetensors.torch on tensorfile: `save`, `save_file`, `load`, `load_file`, `save_model`,
`load_model`, and the helpers about shared storage that other libraries import
(`storage_ptr`, `storage_size`, `_find_shared_tensors`, `_remove_duplicate_names`, `_end_ptr`,
`_is_complete`).

As safetensors does, saving refuses sparse tensors, tensors that share memory (`save_model`
keeps one of each group, naming the others in the metadata) and non-contiguous ones; it also
refuses negated and conjugated views, whose memory does not hold their values."""

from __future__ import annotations

import os
from typing import Dict, List, Optional, Set, Tuple, Union

import torch

from .._native import open_bytes
from ._common import PACKED_TORCH, as_framework, dtype_of_spec, safetensor_errors
from ._open import safe_open
from ._write import write

__all__ = ["load", "load_file", "load_model", "save", "save_file", "save_model", "storage_ptr", "storage_size"]


def storage_ptr(tensor: torch.Tensor) -> int:
    """The address of the storage `tensor` views (0 for a storage without memory, as meta)."""
    try:
        return tensor.untyped_storage().data_ptr()
    except (NotImplementedError, RuntimeError):
        return 0


def storage_size(tensor: torch.Tensor) -> int:
    """The size in bytes of the storage `tensor` views."""
    try:
        return tensor.untyped_storage().nbytes()
    except (NotImplementedError, RuntimeError):
        return tensor.nelement() * tensor.element_size()


def _end_ptr(tensor: torch.Tensor) -> int:
    """The address just past `tensor`'s last element (its start when it has none)."""
    if not tensor.nelement():
        return tensor.data_ptr()
    last = sum((size - 1) * stride for size, stride in zip(tensor.shape, tensor.stride()))
    return tensor.data_ptr() + (last + 1) * tensor.element_size()


def _is_complete(tensor: torch.Tensor) -> bool:
    """Whether `tensor` covers its whole storage from its start."""
    whole = tensor.nelement() * tensor.element_size() == storage_size(tensor)
    return tensor.data_ptr() == storage_ptr(tensor) and whole


def _find_shared_tensors(state_dict: Dict[str, torch.Tensor]) -> List[Set[str]]:
    """The names of `state_dict` grouped by the memory they share: tensors of one storage whose
    bytes overlap are one group; the others (of their own storage, or disjoint parts of one)
    are groups of one. Tensors without memory (meta) are left out. Groups come in the order of
    their storages' first tensors, those of one storage by address."""
    storages: Dict[tuple, Set[str]] = {}
    for name, tensor in state_dict.items():
        ptr, size = storage_ptr(tensor), storage_size(tensor)
        if tensor.device.type != "meta" and ptr != 0 and size != 0:
            storages.setdefault((tensor.device, ptr, size), set()).add(name)
    groups = []
    for names in storages.values():
        groups.extend(_overlapping(names, state_dict))
    return groups


def _overlapping(names: Set[str], state_dict: Dict[str, torch.Tensor]) -> List[Set[str]]:
    """Tensors of one storage grouped by overlapping bytes, by address."""
    if len(names) < 2:
        return [names]
    spans = sorted((state_dict[n].data_ptr(), _end_ptr(state_dict[n]), n) for n in names)
    groups, end = [], None
    for start, stop, name in spans:
        if end is not None and start < end:
            groups[-1].add(name)
            end = max(end, stop)
        else:
            groups.append({name})
            end = stop
    return groups


def _remove_duplicate_names(
    state_dict: Dict[str, torch.Tensor],
    *,
    preferred_names: Optional[List[str]] = None,
    discard_names: Optional[List[str]] = None,
) -> Dict[str, List[str]]:
    """For each group of tensors sharing memory, the name kept (one covering the whole
    storage: of those, the first in name order among `preferred_names`, else among those not in
    `discard_names`, else of all) and the other names, sorted. RuntimeError when no tensor of
    a group covers its whole storage."""
    preferred, discarded = set(preferred_names or []), set(discard_names or [])
    removed: Dict[str, List[str]] = {}
    for group in _find_shared_tensors(state_dict):
        complete = {name for name in group if _is_complete(state_dict[name])}
        if not complete:
            raise RuntimeError(
                f"no tensor of {sorted(group)} covers the whole memory they share: saving any of them would save more "
                "than it holds, so none is kept (save a tensor that covers it, or .clone() them)"
            )
        keep = min(preferred & complete or complete - discarded or complete)
        others = sorted(group - {keep})
        if others:
            removed[keep] = others
    return removed


def save_model(
    model: torch.nn.Module, filename: str, metadata: Optional[Dict[str, str]] = None, force_contiguous: bool = True
) -> None:
    """Save `model`'s state dict to `filename`: of tensors sharing memory one is kept, and each
    name left out is recorded in the metadata with the name kept (unless the metadata given
    has that key). With `force_contiguous`, non-contiguous tensors are saved contiguous."""
    state_dict = model.state_dict()
    metadata = None if metadata is None else dict(metadata)
    for kept, names in _remove_duplicate_names(state_dict).items():
        for name in names:
            metadata = {} if metadata is None else metadata
            metadata.setdefault(name, kept)
            del state_dict[name]
    if force_contiguous:
        state_dict = {name: t.contiguous() for name, t in state_dict.items()}
    try:
        save_file(state_dict, filename, metadata=metadata)
    except ValueError as e:
        raise ValueError(f"{e} Or use save_model(..., force_contiguous=True) to save a contiguous copy.") from e


def load_model(
    model: torch.nn.Module,
    filename: Union[str, os.PathLike],
    strict: bool = True,
    device: Union[str, int] = "cpu",
    *,
    backend: str = "mmap",
) -> Tuple[List[str], List[str]]:
    """Load the file into `model` (as `save_model` wrote it: a name the file leaves out whose
    memory the model shares with a name it holds counts as loaded). Returns the names the
    model has that the file did not give (`missing`) and those of the file the model does not
    take (`unexpected`); with `strict`, either is a RuntimeError."""
    state_dict = load_file(filename, device=device, backend=backend)
    shared = _remove_duplicate_names(model.state_dict(), preferred_names=list(state_dict))
    missing, unexpected = model.load_state_dict(state_dict, strict=False)
    missing, unexpected = set(missing), list(unexpected)
    for names in shared.values():
        for name in names:
            if name in missing:
                missing.remove(name)
            else:
                unexpected.append(name)
    if strict and (missing or unexpected):
        lines = [f"Error(s) in loading state_dict for {type(model).__name__}:"]
        for what, names in (("Missing", missing), ("Unexpected", unexpected)):
            if names:
                lines.append(f"    {what} key(s) in state_dict: " + ", ".join(f'"{n}"' for n in sorted(names)))
        raise RuntimeError("\n".join(lines))
    return sorted(missing), unexpected


def save(tensors: Dict[str, torch.Tensor], metadata: Optional[Dict[str, str]] = None) -> bytes:
    """The tensors and text `metadata` as the bytes of a safetensors file."""
    return write(_items(tensors), metadata)


def save_file(
    tensors: Dict[str, torch.Tensor], filename: Union[str, os.PathLike], metadata: Optional[Dict[str, str]] = None
) -> None:
    """The tensors and text `metadata` written to `filename` as a safetensors file,
    atomically. Each tensor's bytes are copied to the CPU when it is written."""
    write(_items(tensors), metadata, filename)


def load(data: bytes) -> Dict[str, torch.Tensor]:
    """The tensors of the safetensors file `data` (bytes), by name, on the CPU."""
    with safetensor_errors():
        native = open_bytes(bytes(data), "safetensors")
        from .. import Tensor

        return {name: as_framework(Tensor(native, name), "torch", "cpu") for name in native.names()}


def load_file(
    filename: Union[str, os.PathLike], device: Union[str, int] = "cpu", *, backend: str = "mmap"
) -> Dict[str, torch.Tensor]:
    """The tensors of the file `filename`, by name, on `device`."""
    with safe_open(filename, framework="pt", device=device, backend=backend) as f:
        return f.get_tensors()


def _items(tensors) -> list:
    """(name, safetensors code, shape in elements, a callable giving the bytes) of each tensor,
    after safetensors' checks."""
    _check(tensors)
    items = []
    for name, tensor in tensors.items():
        dtype = str(tensor.dtype).removeprefix("torch.")
        code = dtype_of_spec(dtype)
        shape = list(tensor.shape)
        if dtype == PACKED_TORCH and shape:
            shape[-1] *= 2  # two elements a byte
        items.append((name, code, shape, _bytes_of(tensor)))
    return items


def _bytes_of(tensor: torch.Tensor):
    """A callable copying `tensor`'s bytes (to the CPU first)."""

    def copy() -> bytes:
        cpu = tensor.detach().to("cpu")
        if not cpu.nelement():
            return b""
        return cpu.reshape(-1).view(torch.uint8).numpy().tobytes()

    return copy


def _check(tensors) -> None:
    if not isinstance(tensors, dict):
        raise ValueError(f"Expected a dict of [str, torch.Tensor] but received {type(tensors)}")
    for name, tensor in tensors.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"Key `{name}` is invalid, expected torch.Tensor but received {type(tensor)}")
    sparse = [name for name, t in tensors.items() if t.layout != torch.strided]
    if sparse:
        raise ValueError(
            f"You are trying to save a sparse tensors: `{sparse}` which this library does not support. You can make "
            "it a dense tensor before saving with `.to_dense()` but be aware this might make a much larger file than "
            "needed."
        )
    shared = [group for group in _find_shared_tensors(tensors) if len(group) > 1]
    if shared:
        raise RuntimeError(
            f"Some tensors share memory: {shared}. Saved apart they would be saved twice and load as different "
            "tensors; save_model(model, ...) keeps one of each group, or save .clone()s."
        )
    for name, tensor in tensors.items():
        if not tensor.is_contiguous():
            raise ValueError(
                f"{name} is not contiguous: its memory does not hold its elements in order. Save "
                f"tensor.contiguous(), or save the whole tensor it views and slice it again when loading."
            )
        if tensor.is_neg() or tensor.is_conj():
            raise ValueError(
                f"{name} is a {'negated' if tensor.is_neg() else 'conjugated'} view: its memory does not hold its "
                "values. Save tensor.resolve_neg().resolve_conj()."
            )

