"""A real model asked for the half it does not have: `decoder`/`generate` on an encoder-only model and
`encoder` on a decoder-only one are refused in one line that names the kind of model and the commands it
suits (exit 2), on tiny random checkpoints written with save_pretrained and on the real MiniLM / SmolLM2
when their packages are installed."""

import pytest
from conftest import doc
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


# ---- generate on a real model: one short block per step, the full tables with --full -----------------


def test_generate_on_a_real_model_prints_one_short_block_per_step(cli, tiny_models):
    _, dec = tiny_models
    args = ("generate", "--model", dec, "--ids", "3,17,5", "-n", "10")
    brief = cli(*args, "-f", "table")
    assert brief.exit_code == 0, brief.stderr
    lines = brief.stdout.splitlines()
    assert len(lines) < 60, len(lines)
    steps = doc(cli(*args, "-f", "json"))["steps"]
    assert len(steps) == 10
    tokens = [s["token"] for s in steps]
    for s in steps:
        head = next(line for line in lines if line.startswith(f"Step {s['step']} → "))
        assert head == f"Step {s['step']} → {s['token']}   (cache: {s['cache_rows']} rows)"
    tops = [line.strip() for line in lines if line.strip().startswith("top 5: ")]
    assert len(tops) == 10
    for s, top in zip(steps, tops):  # the chosen token is the most likely (greedy), with its probability
        assert top.startswith(f"top 5: {s['token']} {s['probability']:.3f}  ")
    so_far = [line.strip() for line in lines if line.strip().startswith("text so far: ")]
    assert so_far[3] == "text so far: " + " ".join(tokens[:4])  # no tokenizer: the labels, spaced
    assert lines[-1] == " ".join(tokens) and lines[-2] == "Generated text:"

    full = cli(*args, "--full", "-f", "table")
    assert full.exit_code == 0, full.stderr
    assert len(full.stdout.splitlines()) > 3 * len(lines) and "dec.1.self.A" in full.stdout
    assert "Step 0 → " not in full.stdout


def test_full_is_refused_in_notes(cli, tiny_models):  # JSON takes it: every tensor (tests/test_generate_brief.py)
    _, dec = tiny_models
    r = cli("generate", "--model", dec, "--ids", "3,17,5", "-n", "2", "--full", "-f", "markdown")
    assert r.exit_code == 2 and r.stdout == ""
    assert r.stderr == (
        "attncalc: error: --full: expected -f table or -f json (Markdown and LaTeX show every step in full),"
        " found -f markdown\n"
    )


def test_a_bundled_example_keeps_its_full_tables(cli):
    r = cli("generate", "--example", "tinyllama", "-n", "2", "-f", "table")
    assert r.exit_code == 0, r.stderr
    assert "Step 0 → " not in r.stdout and "probabilities, most likely first" in r.stdout


@need_smol
def test_real_smollm2_ends_with_its_decoded_text(cli):
    r = cli("generate", "--model", SMOL, "--text", "The capital of France is", "-n", "3", "-f", "table")
    assert r.exit_code == 0, r.stderr
    assert len(r.stdout.splitlines()) < 20
    assert "text so far:  Paris.↵\n" in r.stdout  # byte-level spaces decoded, a newline shown on one line
    assert r.stdout.endswith("Generated text:\n Paris.\n\n")  # the text itself, its newline kept
