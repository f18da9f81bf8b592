"""What the tests of the bundled examples share: their generator scripts in fixtures/, the check that the
JSON is what a script writes, and transformers' RoPE frequencies for the rope example's configuration."""

import importlib.util
import json
from pathlib import Path

from attncalc.inputs.examples import example_names, examples_dir
from attncalc.learn import lessons

ROOT = Path(__file__).resolve().parent.parent


def script(name: str):
    """fixtures/NAME.py as a module."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "fixtures" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def assert_written_by(module, cli) -> set:
    """Every example of `module.EXAMPLES` is listed by `attncalc examples` and is byte for byte what the
    script writes; returns their names."""
    listed = json.loads(cli("examples").stdout)
    for make in module.EXAMPLES:
        name = make.__name__
        assert name in example_names() and name in listed
        text = (examples_dir() / f"{name}.json").read_text(encoding="utf-8")
        assert text == json.dumps(make(), ensure_ascii=False, indent=1) + "\n"
    return {make.__name__ for make in module.EXAMPLES}


def rope_init(kind: str, n: int, original: bool = False):
    """transformers' (inv_freq, attention factor) for scaling `kind` at n positions, the rope example's head
    (d_k 4, θ 10000) trained on lessons.TRAINED positions and stretched lessons.FACTOR times."""
    import torch
    from transformers import LlamaConfig
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    params = {"rope_type": kind, "factor": lessons.FACTOR, "rope_theta": 10000.0}
    if kind == "yarn" or original:  # the trained length: yarn needs it; `original` gives it to every kind
        params["original_max_position_embeddings"] = lessons.TRAINED
    config = LlamaConfig(
        hidden_size=8,
        num_attention_heads=2,
        head_dim=4,
        max_position_embeddings=lessons.TRAINED,
        rope_parameters=params,
    )
    return ROPE_INIT_FUNCTIONS[kind](config, device=torch.device("cpu"), seq_len=n)
