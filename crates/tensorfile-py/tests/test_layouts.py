"""Any layout through one model: a tensor's parts as its layout names them, and the tensor
decoded to dense, checked on the sparse fixtures made by the zTensor reference."""

from pathlib import Path

import numpy as np
import pytest

import tensorfile

FIXTURES = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "zt" / "rust"


def test_a_sparse_tensor_decodes_to_its_values_among_zeros():
    with tensorfile.open(str(FIXTURES / "sparse_coo.zt")) as f:
        t = f["coo"]
        parts = t.parts()
        assert list(parts) == ["indices", "values"]
        assert parts["indices"].dtype == np.uint64 and parts["indices"].shape == (2, 3)
        dense = t.dense()
        assert dense.shape == (3, 3) and dense.dtype == np.uint64
        rows, cols = parts["indices"]
        assert (dense[rows, cols] == parts["values"]).all()
        mask = np.ones((3, 3), dtype=bool)
        mask[rows, cols] = False
        assert (dense[mask] == 0).all()
        with pytest.raises(tensorfile.UnsupportedError, match="dense\\(\\) decodes it"):
            t.numpy()


def test_csr_decodes_like_coo_of_the_same_rows():
    with tensorfile.open(str(FIXTURES / "sparse_csr.zt")) as f:
        name = next(iter(f))
        t = f[name]
        parts = t.parts()
        assert list(parts) == ["indptr", "indices", "values"]
        dense = t.dense()
        indptr, cols, values = parts["indptr"], parts["indices"], parts["values"]
        expected = np.zeros(tuple(t.shape), dtype=dense.dtype)
        for row in range(len(indptr) - 1):
            for k in range(indptr[row], indptr[row + 1]):
                expected[row, cols[k]] = values[k]
        assert (dense == expected).all()


def test_a_dense_tensor_is_one_data_part_and_dense_is_numpy():
    path = Path(__file__).resolve().parents[3] / "examples" / "tiny.safetensors"
    with tensorfile.open(str(path)) as f:
        t = f[next(iter(f))]
        parts = t.parts()
        assert list(parts) == ["data"]
        assert parts["data"].tobytes() == t.tobytes()
        assert (t.dense(raw=True) == t.numpy(raw=True)).all()
