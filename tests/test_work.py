"""`--work` covers the stage: every tensor the stage computes is written out cell by cell (within the
64-cell default), not only the stage's main tensor."""

import collections
import re

import pytest

EYE = "[[1,0,0,0],[0,1,0,0],[0,0,1,0],[0,0,0,1]]"


def worked(out: str) -> dict:
    """How many cells of each tensor are written out (`Q[爱, 0] = …` lines)."""
    return dict(collections.Counter(re.findall(r"^([A-Za-z_.]+)\[(?!pos,)[^\]]*\] = ", out, re.M)))


@pytest.mark.parametrize(
    "stage, args, expected",
    [
        ("pe", [], {"PE": 12, "H": 12}),
        ("qkv", [], {"Q": 12, "K": 12, "V": 12}),
        ("scores", [], {"S": 9, "S_scaled": 9}),
        ("attend", ["--set", f"attention.Wo={EYE}"], {"O": 12, "Z": 12}),
    ],
)
def test_work_writes_out_every_tensor_of_the_stage(cli, stage, args, expected):
    out = cli(stage, "--example", "woaini", *args, "-f", "table").stdout
    assert worked(out) == expected
    md = cli(stage, "--example", "woaini", *args, "-f", "markdown").stdout
    assert all(f"`{name}[" in md for name in expected)


def test_no_work_and_a_cell_and_large_tensors(cli):
    assert worked(cli("qkv", "--example", "woaini", "-f", "table", "--no-work").stdout) == {}
    assert worked(cli("qkv", "--example", "woaini", "-f", "table", "--cell", "K:爱,1").stdout) == {"K": 1}
    text = "; ".join(" ".join(str((i * 7 + j) % 11) for j in range(9)) for i in range(9))  # 81 cells > 64
    assert worked(cli("softmax", "--scores", text, "-f", "table").stdout) == {}
    assert worked(cli("softmax", "--scores", text, "-f", "table", "--work").stdout) == {"A": 81}
