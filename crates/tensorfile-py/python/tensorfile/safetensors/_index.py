"""Indexing a `get_slice` object as safetensors takes it: an int, a slice of positive step, one
`...`, a tuple of those, or an empty list; anything out of range refused with safetensors'
own messages (`SafetensorError`), checked before any byte is read. Negative slice bounds
count from the end, as in Python (safetensors refuses them)."""

import operator

from ._common import SafetensorError


class Select:
    """One position of a dimension (the dimension goes away)."""

    def __init__(self, index: int):
        self.index = index

    def __str__(self) -> str:
        return str(self.index)


class Narrow:
    """`start:stop:step` of a dimension, bounds as given (`None`: that end)."""

    def __init__(self, start, stop, step: int):
        self.start, self.stop, self.step = start, stop, step

    def __str__(self) -> str:
        text = f"{'' if self.start is None else self.start}:{'' if self.stop is None else self.stop}"
        return text if self.step == 1 else f"{text}:{self.step}"

    def bounds(self, size: int) -> tuple:
        """(start, stop) within a dimension of `size`, negative bounds counted from the end."""

        def bound(value, default):
            if value is None:
                return default
            return max(value + size, 0) if value < 0 else value

        return bound(self.start, 0), bound(self.stop, size)


def parse(key, shape: list) -> list:
    """`key` as one indexer per leading dimension (`...` expanded), checked against `shape`."""
    indexers = _indexers(key, shape)
    if len(indexers) > len(shape):
        _refuse(indexers, shape, "more slicing indexes than dimensions in tensor")
    # Checked from the last dimension to the first, as safetensors does: its message names
    # the last dimension out of range.
    for dim in reversed(range(len(indexers))):
        size, indexer = shape[dim], indexers[dim]
        if isinstance(indexer, Select):
            start, stop = indexer.index, indexer.index + 1
        else:
            start, stop = indexer.bounds(size)
        if start > size or stop > size:
            asked = start if start >= size else stop - 1
            _refuse(indexers, shape, f"index {asked} out of bounds for tensor dimension #{dim} of size {size}")
    return indexers


def _indexers(key, shape: list) -> list:
    if isinstance(key, list):
        if key:
            raise SafetensorError("Non empty lists are not implemented")
        return [Narrow(0, 0, 1)]
    items = list(key) if isinstance(key, tuple) else [key]
    if sum(item is Ellipsis for item in items) > 1:
        raise SafetensorError("Only one ellipsis (...) is allowed in slice index")
    expansion = max(len(shape) - (len(items) - (Ellipsis in items)), 0)
    indexers = []
    for item in items:
        dim = len(indexers)
        if item is Ellipsis:
            indexers.extend(Narrow(None, None, 1) for _ in range(expansion))
        elif isinstance(item, slice):
            step = 1 if item.step is None else operator.index(item.step)
            if step <= 0:
                raise SafetensorError(f"Slice step must be a positive integer, got {step}")
            start, stop = (None if b is None else operator.index(b) for b in (item.start, item.stop))
            indexers.append(Narrow(start, stop, step))
        else:
            try:
                index = operator.index(item)
            except TypeError:
                raise SafetensorError(
                    f"Unsupported slice index at position {dim}: expected slice, int, or ellipsis"
                ) from None
            size = shape[dim] if dim < len(shape) else 0
            if index < 0:
                if index + size < 0:
                    raise SafetensorError(f"Invalid index {index} for dimension {dim} of size {size}")
                index += size
            indexers.append(Select(index))
    return indexers


def check_pairs(indexers: list, shape: list) -> None:
    """For a dtype of two elements a byte (float4), indexers of every dimension: the last one
    must take whole bytes."""
    last = indexers[-1]
    if isinstance(last, Narrow) and last.step == 1:
        start, stop = last.bounds(shape[-1])
        if start % 2 == 0 and max(start, stop) % 2 == 0:
            return
    _refuse(
        indexers,
        shape,
        "The slice is slicing for subbytes dtypes, and the slice does not end up at a byte boundary, this is invalid.",
    )


def _refuse(indexers: list, shape: list, why: str):
    shown = ", ".join(str(i) for i in indexers)
    raise SafetensorError(f"Error during slicing [{shown}] with shape {list(shape)}: {why}")


def as_python(indexers: list, shape: list) -> tuple:
    """The checked indexers as a Python index of non-negative bounds (numpy's and torch's)."""
    out = []
    for indexer, size in zip(indexers, shape):
        if isinstance(indexer, Select):
            out.append(indexer.index)
        else:
            start, stop = indexer.bounds(size)
            out.append(slice(start, max(start, stop), indexer.step))
    return tuple(out)
