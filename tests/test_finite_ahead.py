"""A safetensors file's float32 data checked finite whole, on a thread of its own, while the command reads the
tokenizer (safetensors_format.FiniteAhead): a weight of a file found finite skips its own check; a non-finite
value anywhere leaves every weight to its own check, which names the bad cell, as without a second core."""

import json
import os

import crafted
import numpy as np
import pytest

from attncalc.core import fixture, products
from attncalc.errors import InputError
from attncalc.inputs.checkpoints import safetensors_format
from attncalc.inputs.checkpoints.safetensors_format import FiniteAhead, SafetensorsFile
from attncalc.inputs.checkpoints.tensors import SafetensorsFiles

DOWN = "model.layers.0.mlp.down_proj.weight"


@pytest.fixture
def two(monkeypatch):
    monkeypatch.setattr(products, "two_cores", True)


def write(tmp_path, w) -> str:
    path = tmp_path / "model.safetensors"
    path.write_bytes(crafted.safetensors_bytes(w))
    return str(path)


def test_a_finite_file_lets_its_weights_skip_their_own_check(tmp_path, two, monkeypatch):
    w = crafted.weights()
    lazy = SafetensorsFiles([write(tmp_path, w)]).get(DOWN).T  # through the transpose a linear weight takes
    assert lazy.verified is not None and lazy.verified()
    monkeypatch.setattr(fixture, "_all_finite", lambda a: pytest.fail("checked a second time"))
    assert np.array_equal(fixture.to_array(lazy, "W2"), w[DOWN].T)


def test_without_a_second_core_each_weight_checks_itself(tmp_path, monkeypatch):
    monkeypatch.setattr(products, "two_cores", False)
    assert SafetensorsFiles([write(tmp_path, crafted.weights())]).get(DOWN).verified is None


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_value_not_finite_anywhere_leaves_each_weight_to_its_own_check(tmp_path, two, bad):
    w = crafted.weights()
    w["lm_head.weight"][3, 1] = bad
    tensors = SafetensorsFiles([write(tmp_path, w)])
    assert tensors.get(DOWN).verified() is False
    assert np.array_equal(fixture.to_array(tensors.get(DOWN), "W2"), w[DOWN])  # checked itself: finite
    with pytest.raises(InputError) as caught:
        fixture.to_array(tensors.get("lm_head.weight"), "lm_head")
    assert "lm_head[3][1]" in str(caught.value)


def test_a_huge_finite_value_is_not_refused(tmp_path, two):
    w = crafted.weights()
    w[DOWN][0, 0] = 3e38  # its square overflows float32: the whole-file answer is no, each weight's own yes
    tensors = SafetensorsFiles([write(tmp_path, w)])
    with np.errstate(all="raise"):
        assert np.array_equal(fixture.to_array(tensors.get(DOWN), "W2"), w[DOWN])


@pytest.mark.parametrize("two_cores", [False, True], ids=["one core", "two cores"])
def test_the_command_names_a_nan_weight_either_way(tmp_path, cli, monkeypatch, two_cores):
    monkeypatch.setattr(products, "two_cores", two_cores)
    monkeypatch.setattr("attncalc.run.blas.install", lambda: None)  # the command keeps the core count set here
    w = crafted.weights()
    w[DOWN][1, 2] = np.nan
    folder = crafted.folder(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(crafted.safetensors_bytes(w))
    result = cli("decoder", "--model", folder, "--ids", "1 2", "-f", "json", "--only", "dec_out")
    assert result.exit_code == 2
    assert "decoder.layers[0].ffn.W2[2][1]: expected a number, finite, found nan" in result.stderr


def test_a_tensor_not_read_as_float32_from_the_data_start_is_not_covered(tmp_path, two):
    """A BF16 tensor, and a float32 one 2 bytes off the data's start, keep their own checks."""
    half, single = np.ones(1, "<u2"), np.ones(3, "<f4")
    header = {
        "h": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]},
        "f": {"dtype": "F32", "shape": [3], "data_offsets": [2, 14]},
    }
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    path = tmp_path / "odd.safetensors"
    path.write_bytes(len(text).to_bytes(8, "little") + text + half.tobytes() + single.tobytes())
    file = SafetensorsFile(str(path))
    file.check_ahead()
    assert file.finite_ahead("h") is None and file.finite_ahead("f") is None
    assert np.array_equal(file.array("f"), single)
    plain = SafetensorsFile(write(tmp_path, {"f": single}))
    plain.check_ahead()
    assert plain.finite_ahead("f")() is True  # the same tensor at the data's start is covered


def test_a_checkpoint_larger_than_the_budget_checks_each_weight_as_it_is_used(tmp_path, two, monkeypatch):
    """A command may need one layer of a large model: its files are not read whole ahead of use."""
    path = write(tmp_path, crafted.weights())
    monkeypatch.setattr(safetensors_format, "AHEAD_BYTES", SafetensorsFile(path).data_bytes - 1)
    assert SafetensorsFiles([path]).get(DOWN).verified is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_asks_its_own_check():
    ahead = FiniteAhead(np.ones(1024, np.float32).tobytes(), 0, 1024)
    assert ahead() is True
    read, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's thread is not here, so the answer is "check yourself"
        os.write(write_end, b"1" if ahead() is False else b"0")
        os._exit(0)
    os.waitpid(pid, 0)
    assert os.read(read, 1) == b"1"
