"""A large vocabulary costs what the question costs (issue 38): an embedding read by rows (a lookup reads
its rows, a tied output head multiplies a block of rows at a time), with the numbers of the whole table."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from test_gemma3 import gemma_path, need_gemma  # noqa: F401  (the session fixture, assembled once)

from attncalc.core.products import ROW_BLOCK, times_rows


class Table:
    """An on-demand table over an array, counting the rows it hands out."""

    def __init__(self, values):
        self.values, self.shape, self.dtype, self.read = values, values.shape, values.dtype, 0

    def take(self, ids):
        self.read += len(ids)
        return self.values[ids]

    def blocks(self, starts):
        for start, stop in zip(starts, starts[1:] + [self.shape[0]]):
            self.read += stop - start
            yield start, self.values[start:stop]


@pytest.mark.parametrize("rows", [100, ROW_BLOCK * 2 + 10, ROW_BLOCK * 2 + 100])
def test_the_tied_head_by_blocks_equals_the_whole_product(rows):
    rng = np.random.default_rng(0)
    table = rng.normal(size=(rows, 24)).astype(np.float32)
    x = rng.normal(size=(3, 24))
    on_demand = Table(table)
    np.testing.assert_allclose(times_rows(x, on_demand), x @ table.T.astype(np.float64), rtol=1e-13, atol=1e-12)
    assert on_demand.read == rows  # every row once


def test_a_lookup_reads_only_its_rows():
    from attncalc.core.ops import Lookup

    table = Table(np.arange(40, dtype=np.float32).reshape(10, 4))
    out = Lookup([3, 7, 3], ["a", "b", "a"]).compute(table)
    np.testing.assert_array_equal(out, [[12, 13, 14, 15], [28, 29, 30, 31], [12, 13, 14, 15]])
    assert out.dtype == np.float64 and table.read == 3


# the child's own peak: VmHWM belongs to the memory of this program image (ru_maxrss would carry the
# forking parent's peak across exec, and pytest holds a whole model by then)
PEAK = """
import sys
from attncalc.cli.app import app
try:
    app(sys.argv[1:], prog_name="attncalc")
except SystemExit:
    pass
with open("/proc/self/status") as status:
    sys.stderr.write(next(line.split()[1] for line in status if line.startswith("VmHWM:")))
"""


@need_gemma
def test_gemma3s_first_layer_reads_two_rows_not_its_vocabulary(gemma_path):  # noqa: F811
    args = ["softmax", "--model", gemma_path, "--ids", "2 100", "--layer", "0", "-f", "json", "--only", "dec.0.self.A"]
    if not os.path.exists("/proc/self/status"):
        pytest.skip("the peak is read from /proc/self/status (Linux)")
    done = subprocess.run([sys.executable, "-c", PEAK, *args], capture_output=True, text=True, timeout=600)
    a = np.array(json.loads(done.stdout)["tensors"]["dec.0.self.A"])
    assert a.shape == (4, 2, 2) and np.allclose(a.sum(-1), 1)
    peak_kb = int(done.stderr.strip().splitlines()[-1])  # VmHWM, in kB
    assert peak_kb < 1 << 20  # under 1 GiB (about 150 MB; reading the whole table widened took 2.8 GB)


@need_gemma
def test_gemma3s_rows_are_the_whole_tables_rows(gemma_path):  # noqa: F811
    from attncalc.inputs.checkpoints import open_checkpoint

    ckpt = open_checkpoint(gemma_path)
    rows = ckpt.tensors.rows("token_embd.weight")
    some = rows.take([0, 100, 262143, 100])
    whole = ckpt.tensors.get("token_embd.weight").value()
    np.testing.assert_array_equal(some, whole[[0, 100, 262143, 100]])
    starts = list(range(0, whole.shape[0], ROW_BLOCK))
    for _, (start, block) in zip(range(2), rows.blocks(starts)):  # the first two blocks of a pass
        assert len(block) == ROW_BLOCK
        np.testing.assert_array_equal(block, whole[start : start + len(block)])
