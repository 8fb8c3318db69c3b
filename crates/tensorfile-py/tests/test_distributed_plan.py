"""The distributed load's plan without torch (numpy only: this runs wherever the package does):
`distributed_plan` gives each rank a contiguous run of the tensors in file order, every tensor
exactly once, each to the rank whose share [r*T/N, (r+1)*T/N) of the T bytes holds its middle
byte, so that no rank has more than T/N plus the largest tensor; the same plan on every call.
The exchange's batches (`tensorfile._distributed`, pure Python) are checked too: each rank's run
cut into consecutive batches of at most the budget (a larger tensor alone), tensors at aligned
offsets, empty tensors in none. tests/test_distributed.py runs the load itself, with torch."""

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import tensorfile
from tensorfile import _distributed

SIZES = [1000, 10, 7, 4000, 0, 333, 2048, 1, 1, 900, 5000, 64, 0, 3]


def write(path: Path, sizes: list) -> list:
    """A safetensors file of uint8 tensors `t0`, `t1`... of `sizes` bytes; their names."""
    names = [f"t{i}" for i in range(len(sizes))]
    tensorfile.save_file({n: np.full(s, i % 251, dtype=np.uint8) for i, (n, s) in enumerate(zip(names, sizes))}, path)
    return names


def check_plan(plan: list, names: list, sizes: list, world_size: int) -> None:
    """Everything the plan promises, for tensors `names` of `sizes` bytes in file order."""
    assert len(plan) == world_size
    assert all(set(part) == {"names", "bytes"} for part in plan), plan
    # Contiguous runs in rank order: concatenated, they are the file's tensors, each once.
    assert sum((part["names"] for part in plan), []) == names
    size_of = dict(zip(names, sizes))
    total, largest = sum(sizes), max(sizes, default=0)
    assert sum(part["bytes"] for part in plan) == total
    start = 0
    owner = {n: r for r, part in enumerate(plan) for n in part["names"]}
    for n in names:
        middle = Fraction(2 * start + size_of[n], 2)
        r = owner[n]
        if total == 0:
            assert r == 0, f"{n}: no bytes at all, yet rank {r}"
        else:
            share = Fraction(total, world_size)
            # The last rank also takes a middle at the very end (a zero-size last tensor).
            assert r * share <= middle < (r + 1) * share or (r == world_size - 1 and middle == total), (
                f"{n}: middle byte {middle} is not in rank {r}'s share of {share}"
            )
        start += size_of[n]
    for r, part in enumerate(plan):
        assert part["bytes"] == sum(size_of[n] for n in part["names"]), f"rank {r}: bytes"
        assert part["bytes"] <= Fraction(total, world_size) + largest, f"rank {r} holds more than its share"


@pytest.mark.parametrize("world_size", range(1, 10))
def test_the_plan_gives_each_tensor_once_by_its_middle_byte(tmp_path, world_size):
    path = tmp_path / "m.safetensors"
    names = write(path, SIZES)
    plan = tensorfile.distributed_plan(path, world_size)
    check_plan(plan, names, SIZES, world_size)
    assert tensorfile.distributed_plan(path, world_size) == plan, "the same plan on every call"
    assert tensorfile.distributed_plan(str(path), world_size) == plan, "a str path plans the same"


def test_the_plan_of_two_ranks_is_the_one_worked_out_by_hand(tmp_path):
    """Total 13,367 bytes: rank 0's share ends at 6,683.5; t5 (bytes 5,017 to 5,350) has its
    middle before it, t6 (5,350 to 7,398, middle 6,374) too, t7 (at 7,398) after it."""
    path = tmp_path / "m.safetensors"
    write(path, SIZES)
    plan = tensorfile.distributed_plan(path, 2)
    assert plan[0]["names"] == [f"t{i}" for i in range(7)]
    assert plan[0]["bytes"] == 1000 + 10 + 7 + 4000 + 0 + 333 + 2048
    assert plan[1]["names"] == [f"t{i}" for i in range(7, len(SIZES))]
    assert plan[1]["bytes"] == 1 + 1 + 900 + 5000 + 64 + 0 + 3


def test_more_ranks_than_tensors_leaves_some_ranks_nothing(tmp_path):
    path = tmp_path / "m.safetensors"
    names = write(path, [100, 100, 100])
    plan = tensorfile.distributed_plan(path, 8)
    check_plan(plan, names, [100, 100, 100], 8)
    assert [len(part["names"]) for part in plan].count(0) == 5
    # Middles at 50, 150 and 250 of 300: the shares of 37.5 bytes holding them.
    assert [r for r, part in enumerate(plan) if part["names"]] == [1, 4, 6]


def test_one_tensor_larger_than_a_share_takes_its_rank_alone(tmp_path):
    sizes = [10, 10, 1000, 10, 10]
    path = tmp_path / "m.safetensors"
    names = write(path, sizes)
    plan = tensorfile.distributed_plan(path, 4)
    check_plan(plan, names, sizes, 4)
    holder = next(part for part in plan if "t2" in part["names"])
    assert holder["bytes"] > sum(sizes) / 4


def test_a_file_of_empty_tensors_goes_to_rank_0(tmp_path):
    path = tmp_path / "m.safetensors"
    names = write(path, [0, 0, 0])
    plan = tensorfile.distributed_plan(path, 3)
    check_plan(plan, names, [0, 0, 0], 3)
    assert plan == [{"names": names, "bytes": 0}, {"names": [], "bytes": 0}, {"names": [], "bytes": 0}]


def test_the_plan_counts_bytes_of_every_dtype(tmp_path):
    """Sizes are bytes, not elements: float64 counts 8 per element, bool 1."""
    tensors = {
        "f64": np.zeros((10, 10), dtype=np.float64),
        "flags": np.zeros(800, dtype=bool),
        "f16": np.zeros((3, 7), dtype=np.float16),
        "scalar": np.array(1.5, dtype=np.float32),
        "ids": np.arange(50, dtype=np.int64),
    }
    path = tmp_path / "m.safetensors"
    tensorfile.save_file(tensors, path)
    with tensorfile.open(path) as f:
        order = list(f)  # file order, which the writer chooses
    assert sorted(order) == sorted(tensors)
    sizes = [tensors[n].nbytes for n in order]
    for world_size in (1, 2, 3, 5):
        check_plan(tensorfile.distributed_plan(path, world_size), order, sizes, world_size)


def test_a_sharded_checkpoint_is_planned_across_its_shards(tmp_path):
    source = tmp_path / "m.safetensors"
    names = write(source, SIZES)
    (tmp_path / "sharded").mkdir()
    written = tensorfile.convert(source, tmp_path / "sharded" / "model.safetensors", max_shard_size=3000)
    assert len(written["files"]) > 2
    with tensorfile.open(written["index"]) as f:
        order = list(f)
        sizes = [f[n].nbytes for n in order]
    assert sorted(order) == sorted(names)
    for world_size in (2, 3):
        check_plan(tensorfile.distributed_plan(written["index"], world_size), order, sizes, world_size)


@pytest.mark.parametrize("world_size", [0, -1, True, 1.5, "2", None])
def test_a_world_size_that_is_no_count_of_processes_is_refused(tmp_path, world_size):
    path = tmp_path / "m.safetensors"
    write(path, [4])
    with pytest.raises(tensorfile.UsageError):
        tensorfile.distributed_plan(path, world_size)


class Sized:
    """What `_batches` reads of a tensor: its bytes."""

    def __init__(self, nbytes: int):
        self.nbytes = nbytes


@pytest.mark.parametrize("budget", [64, 1000, 4096, 1 << 20])
@pytest.mark.parametrize("world_size", [1, 2, 3, 5])
def test_the_exchange_batches_each_rank_s_run_within_the_budget(world_size, budget):
    sizes = SIZES + [65, 63, 64, 1, 4096, 17]
    tensors = [Sized(n) for n in sizes]
    ranks = _distributed.owners(sizes, world_size)
    assert ranks == sorted(ranks), "contiguous runs in rank order"
    batches = _distributed._batches(tensors, ranks, budget)
    placed = [i for b in batches for i, _ in b.items]
    # Every tensor with bytes in exactly one batch, in file order; empty ones in none.
    assert placed == [i for i, n in enumerate(sizes) if n]
    for b in batches:
        assert b.items, "no empty batch"
        assert all(ranks[i] == b.owner for i, _ in b.items), "a batch holds one rank's tensors"
        end = 0
        for i, offset in b.items:
            assert offset % _distributed.ALIGN == 0 and offset >= end, (i, offset, end)
            end = offset + sizes[i]
        assert b.size == end
        assert b.size <= budget or len(b.items) == 1, "only a tensor alone may pass the budget"
    assert [b.owner for b in batches] == sorted(b.owner for b in batches)
