"""A real model asked for the half it does not have: `decoder`/`generate` on an encoder-only model and
`encoder` on a decoder-only one are refused in one line that names the kind of model and the commands it
suits (exit 2), on tiny random checkpoints written with save_pretrained and on the real MiniLM / SmolLM2
when their packages are installed."""

import pytest
from test_checkpoints_real import MINILM, SMOL, need_minilm, need_smol
from test_checkpoints_tiny import llama, randomise, save, tiny_bert


@pytest.fixture(scope="module")
def tiny_models(tmp_path_factory):
    root = tmp_path_factory.mktemp("halves")
    return save(tiny_bert(seed=3), root / "bert"), save(randomise(llama(), seed=1).eval(), root / "llama")


def refused(result, model: str, kind: str, suggestion: str) -> str:
    assert result.exit_code == 2, result.stdout[:300]
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"attncalc: error: --model {model}: ")
    assert f"found {kind} model" in lines[0] and f"try {suggestion}" in lines[0]
    assert "Traceback" not in result.stderr and "special.bos" not in result.stderr
    return lines[0]


ENCODER_ONLY = ("an encoder-only", "attncalc encoder")
DECODER_ONLY = ("a decoder-only", "attncalc decoder or attncalc generate")


@pytest.mark.parametrize("command", ["decoder", "generate"])
def test_decoder_or_generate_on_a_tiny_bert_says_it_has_no_decoder(cli, tiny_models, command):
    bert, _ = tiny_models
    line = refused(cli(command, "--model", bert, "--ids", "3,17,5"), bert, *ENCODER_ONLY)
    assert f"expected a model with a decoder ({command} runs one)" in line and "with no decoder" in line


def test_encoder_on_a_tiny_llama_says_it_is_decoder_only(cli, tiny_models):
    _, dec = tiny_models
    line = refused(cli("encoder", "--model", dec, "--ids", "3,17,5"), dec, *DECODER_ONLY)
    assert "expected a model with an encoder (encoder runs one)" in line and "with no encoder" in line


def test_each_model_still_runs_the_half_it_has(cli, tiny_models):
    bert, dec = tiny_models
    assert cli("encoder", "--model", bert, "--ids", "3,17,5", "-f", "json").exit_code == 0
    assert cli("decoder", "--model", dec, "--ids", "3,17,5", "-f", "json").exit_code == 0
    assert cli("attend", "--model", dec, "--ids", "3,17,5", "-f", "json").exit_code == 0  # one block of a decoder


@need_minilm
@pytest.mark.parametrize("command", ["decoder", "generate"])
def test_real_minilm_has_no_decoder(cli, command):
    refused(cli(command, "--model", MINILM, "--text", "I love you"), MINILM, *ENCODER_ONLY)


@need_smol
def test_real_smollm2_has_no_encoder(cli):
    refused(cli("encoder", "--model", SMOL, "--text", "I love you"), SMOL, *DECODER_ONLY)
