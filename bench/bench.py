"""How fast is attncalc, against the floor of what the same work can cost?

    python bench/bench.py [--runs 9] [--skip-large] [--only a,b,c,d,e]

It says first how long it will take (several minutes with section d on two cores), and exits 0
whatever it measured: a figure that misses its goal is marked MISSED and counted at the end.

Every figure is a median of repeated runs, each run a fresh process started by the same
Python, attncalc and its floor interleaved (so a busy machine slows both alike), printed as
a ratio to the floor next to the goal:

  a  each stage command (`attncalc STAGE --example woaini -f json`) against the same stage
     in bench/minimal_app.py (a bare Typer app computing it with plain NumPy);
  b  `attncalc --help` against the minimal app's `--help`; NumPy must not be imported;
  c  the seven-stage pipe `embed | pe | qkv | scores | mask | softmax | attend` against one stage;
  d  one attention block at real size, attncalc driven through the CLI (`attend --fixture
     F --only Z -f json`, and `attend --fixture F -f table` as a person at a terminal runs it)
     against a plain NumPy script reading the same fixture and writing the same Z (and torch's
     scaled_dot_product_attention where installed): time and peak RSS;
  e  generation with and without the KV cache, when `attncalc generate` exists.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PY = sys.executable
_SCRIPT = os.path.join(os.path.dirname(PY), "attncalc")
ATTNCALC = [_SCRIPT] if os.path.exists(_SCRIPT) else [PY, "-m", "attncalc"]
MINIMAL = [PY, os.path.join(HERE, "minimal_app.py")]
STAGES = ["embed", "pe", "qkv", "scores", "mask", "softmax", "attend", "encoder", "decoder"]
PIPE = STAGES[:7]
ENV = {**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}
ENV.pop("ATTNCALC_DEBUG", None)
# Bytecode cached, as an installed package has it (pip compiles it), but in a temporary folder so
# nothing is written next to the sources; PYTHONDONTWRITEBYTECODE would recompile attncalc every run.
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
PYC = tempfile.mkdtemp(prefix="attncalc-bench-pyc-")
ENV["PYTHONPYCACHEPREFIX"] = PYC
atexit.register(shutil.rmtree, PYC, True)

# The floor of (d): the same block in plain NumPy (or torch), from the same fixture to the same JSON.
FLOOR = r"""
import json, sys
import numpy as np
fx = json.load(open(sys.argv[1]))
vocab = {t: i for i, t in enumerate(fx["vocab"])}
d, p = fx["d_model"], fx["attention"]
h = p["heads"]
x = np.array(fx["embedding"])[[vocab[t] for t in fx["source"]]]          # [n, d]
pos, i = np.arange(len(x))[:, None], np.arange(d)[None, :]
ang = pos / 10000 ** ((i - i % 2) / d)
x = x + np.where(i % 2 == 0, np.sin(ang), np.cos(ang))                   # H = X + PE
q, k, v = (x @ np.array(p[w]) for w in ("Wq", "Wk", "Wv"))                # [n, h·d_k]
n, dk = len(x), q.shape[1] // h
q, k, v = (m.reshape(n, h, dk).transpose(1, 0, 2) for m in (q, k, v))     # [h, n, d_k]
if sys.argv[2] == "torch":
    import torch
    import torch.nn.functional as F
    o = F.scaled_dot_product_attention(*(torch.from_numpy(np.ascontiguousarray(m)) for m in (q, k, v))).numpy()
else:
    s = q @ k.transpose(0, 2, 1) / np.sqrt(dk)                            # [h, n, n]
    s -= s.max(-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(-1, keepdims=True)
    o = s @ v                                                             # [h, n, d_k]
z = o.transpose(1, 0, 2).reshape(n, h * dk) @ np.array(p["Wo"])
if sys.argv[3:] == ["print"]:
    print(z)                                                              # a summary, as a table is
else:
    sys.stdout.write(json.dumps({"fixture": fx, "tensors": {"Z": z.tolist()}}) + "\n")  # as a pipe document
"""


def run(cmd, stdin_path=None):
    """(wall seconds, peak RSS in MB, exit code) of one fresh process, its output discarded."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    start = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    p.returncode = os.waitstatus_to_exitcode(status)
    if stdin_path:
        stdin.close()
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd[-6:])}: exit {p.returncode}: {err.decode()[-300:]}")
    return wall, usage.ru_maxrss / 1024, p.returncode


def pipe_once(stages):
    """Wall time of `attncalc embed … | attncalc pe -f json | …` as a shell would run it."""
    start = time.perf_counter()
    procs, prev = [], None
    for k, stage in enumerate(stages):
        cmd = ATTNCALC + [stage, "-f", "json"] + (["--example", "woaini"] if k == 0 else [])
        last = k == len(stages) - 1
        p = subprocess.Popen(
            cmd,
            stdin=prev.stdout if prev else subprocess.DEVNULL,
            env=ENV,
            stdout=subprocess.DEVNULL if last else subprocess.PIPE,
        )
        if prev:
            prev.stdout.close()
        procs.append(p)
        prev = p
    codes = [p.wait() for p in procs]
    if any(codes):
        raise RuntimeError(f"pipe failed: exit codes {codes}")
    return time.perf_counter() - start


def compare(runs, a, b):
    """Interleaved runs of two zero-argument callables → (median a, median b) of their results."""
    ra, rb = [], []
    a(), b()  # warm-up: bytecode cache and OS file cache filled
    for _ in range(runs):
        ra.append(a())
        rb.append(b())
    med = lambda xs: (
        tuple(statistics.median(col) for col in zip(*xs)) if isinstance(xs[0], tuple) else statistics.median(xs)
    )
    return med(ra), med(rb)


ROWS = []


def row(section, what, value, floor, unit, goal, note=""):
    ratio = value / floor if floor else float("nan")
    ok = "ok" if goal is None or ratio <= goal else "MISSED"
    ROWS.append(
        (
            section,
            what,
            f"{value:.3f} {unit}" if unit == "s" else f"{value:.0f} {unit}",
            f"{floor:.3f} {unit}" if unit == "s" else f"{floor:.0f} {unit}",
            f"{ratio:.2f}×",
            f"≤ {goal}×" if goal else "-",
            ok if goal else "",
            note,
        )
    )
    print(f"  {section} {what}: {ratio:.2f}×", file=sys.stderr, flush=True)


def works(cmd):
    try:
        run(cmd)
        return True
    except RuntimeError as e:
        print(f"  skipped: {e}", file=sys.stderr)
        return False


def bench_stages(runs):
    for stage in STAGES:
        cmd = ATTNCALC + [stage, "--example", "woaini", "-f", "json"]
        if not works(cmd):
            row("a", stage, float("nan"), float("nan"), "s", None, "n/a: woaini has no " + stage)
            continue
        (t, _, _), (f, _, _) = compare(runs, lambda: run(cmd), lambda: run(MINIMAL + [stage, "-f", "json"]))
        row("a", stage, t, f, "s", 1.2, "vs minimal Typer + NumPy")
    cmd = ATTNCALC + ["softmax", "--example", "woaini", "-f", "json"]
    (t, _, _), (f, _, _) = compare(runs, lambda: run(cmd), lambda: run([PY, "-c", "import numpy, typer"]))
    row("a", "softmax vs bare imports", t, f, "s", None, 'vs python -c "import numpy, typer"')


NUMPY_PROBE = (
    "import sys\nfrom attncalc.cli.app import app\ntry:\n    app({args!r}, prog_name='attncalc')\n"
    "except SystemExit:\n    pass\nprint('numpy' in sys.modules, file=sys.stderr)"
)


def imports_numpy(args) -> bool:
    """Whether running the app with `args` imports NumPy (in a fresh process)."""
    out = subprocess.run([PY, "-c", NUMPY_PROBE.format(args=args)], capture_output=True, text=True, env=ENV)
    return out.stderr.strip().splitlines()[-1:] != ["False"]


def bench_help(runs):
    (t, _, _), (f, _, _) = compare(runs, lambda: run(ATTNCALC + ["--help"]), lambda: run(MINIMAL + ["--help"]))
    numpy = imports_numpy(["--help"])
    row("b", "--help", t, f, "s", 1.2, "NumPy imported: " + ("YES (goal missed)" if numpy else "no"))
    if numpy:
        ROWS[-1] = ROWS[-1][:6] + ("MISSED",) + ROWS[-1][7:]
    for stage in ("softmax",):
        (t, _, _), (f, _, _) = compare(
            runs, lambda: run(ATTNCALC + [stage, "--help"]), lambda: run(MINIMAL + [stage, "--help"])
        )
        row(
            "b",
            f"{stage} --help",
            t,
            f,
            "s",
            None,
            "NumPy imported: " + ("yes" if imports_numpy([stage, "--help"]) else "no"),
        )


def with_cpu(fn):
    """fn's result and the CPU seconds (user + system) its child processes used."""
    import resource

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = fn()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return out, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def bench_pipe(runs):
    one = ATTNCALC + ["attend", "--example", "woaini", "-f", "json"]
    (t, cpu), (f, fcpu) = compare(
        runs, lambda: with_cpu(lambda: pipe_once(PIPE)), lambda: with_cpu(lambda: run(one)[0])
    )
    row("c", "7-stage pipe", t, f, "s", 4, f"vs `attend` alone; {os.cpu_count()} cores share the 7 processes")
    row("c", "7-stage pipe, CPU per stage", cpu / 7, fcpu, "s", None, "CPU time of one stage in the pipe vs alone")
    (t2, _), (par, _) = compare(runs, lambda: (pipe_once(PIPE), 0), lambda: (at_once(one, 7), 0))
    row("c", "7 x attend at once (no pipe)", par, f, "s", None, "this machine's floor for 7 processes, vs one")
    row("c", "7-stage pipe vs 7 at once", t2, par, "s", None, "what the pipe itself adds")


def at_once(cmd, k):
    """Wall time of k copies of cmd started together (no pipe between them)."""
    start = time.perf_counter()
    procs = [subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=ENV) for _ in range(k)]
    if any(p.wait() for p in procs):
        raise RuntimeError(f"{' '.join(cmd)} failed")
    return time.perf_counter() - start


def make_fixture(path, n, d, heads, vocab=256, seed=0):
    import numpy as np

    rng = np.random.default_rng(seed)
    w = lambda: (rng.standard_normal((d, d)) / np.sqrt(d)).round(4).tolist()
    fx = {
        "name": f"bench-{n}x{d}",
        "vocab": [f"t{k}" for k in range(vocab)],
        "d_model": d,
        "embedding": rng.standard_normal((vocab, d)).round(4).tolist(),
        "position": {"type": "sinusoidal"},
        "source": [f"t{k}" for k in rng.integers(0, vocab, n)],
        "attention": {"heads": heads, "kv_heads": heads, "Wq": w(), "Wk": w(), "Wv": w(), "Wo": w()},
    }
    with open(path, "w") as f:
        json.dump(fx, f)


def bench_large(runs, sizes):
    try:
        import torch  # noqa: F401

        have_torch = True
    except ImportError:
        have_torch = False
    with tempfile.TemporaryDirectory() as tmp:
        for n, d, heads in sizes:
            path = os.path.join(tmp, f"fx{n}.json")
            make_fixture(path, n, d, heads)
            label = f"n={n} d={d} h={heads}"
            cmd = ATTNCALC + ["attend", "--fixture", path, "--only", "Z", "-f", "json"]
            once = run(cmd)[0]
            print(f"  d {label}: about {8 * (max(3, runs // 3) + 1) * once:.0f} s", file=sys.stderr, flush=True)
            floor = [PY, "-c", FLOOR, path, "numpy"]
            (t, m, _), (ft, fm, _) = compare(max(3, runs // 3), lambda: run(cmd), lambda: run(floor))
            row("d", f"{label} time", t, ft, "s", 1.5, "CLI: attend --fixture F --only Z -f json vs NumPy")
            row("d", f"{label} peak RSS", m, fm, "MB", 1.5, "same runs, peak RSS (wait4)")
            table = ATTNCALC + ["attend", "--fixture", path, "-f", "table"]  # what a person at a terminal runs
            printed = floor + ["print"]  # the floor prints NumPy's summary of Z instead of writing it all
            (t2, m2, _), (ft2, fm2, _) = compare(max(3, runs // 3), lambda: run(table), lambda: run(printed))
            row("d", f"{label} table, time", t2, ft2, "s", 1.2, "CLI: attend --fixture F -f table vs print(Z)")
            row("d", f"{label} table, peak RSS", m2, fm2, "MB", 1.2, "same runs, peak RSS (wait4)")
            if have_torch:
                (tt, tm, _), _ = compare(max(3, runs // 3), lambda: run([PY, "-c", FLOOR, path, "torch"]), lambda: 0)
                row("d", f"{label} torch SDPA time", t, tt, "s", None, "attncalc vs torch (incl. import torch)")
                row("d", f"{label} torch SDPA RSS", m, tm, "MB", None, "attncalc vs torch")


def has_generate() -> bool:
    out = subprocess.run(ATTNCALC + ["generate", "--help"], capture_output=True, text=True, env=ENV)
    return out.returncode == 0 and "coming" not in out.stdout


def bench_generate(runs, tokens=128):
    if not has_generate():
        row("e", "generate", float("nan"), float("nan"), "s", None, "n/a: `attncalc generate` is not built yet")
        return
    base = ATTNCALC + ["generate", "--example", "woaini", "-f", "json"]
    if works(base):
        (t, _, _), (f, _, _) = compare(runs, lambda: run(base + ["--no-kv-cache"]), lambda: run(base))
        row("e", "woaini --no-kv-cache", t, f, "s", None, "vs with the cache (4 tokens: start-up dominates)")
    sys.path.insert(0, HERE)
    try:
        from bench_generate import random_model  # the generation bench's random model
    except ImportError:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "gen.json")
        fx = random_model(256, 4, 2, 1024, 256, 8, True)
        fx["special"].pop("eos", None)  # no early stop: every run makes `tokens` new tokens
        with open(path, "w") as f:
            json.dump(fx, f)
        cmd = ATTNCALC + ["generate", "--fixture", path, "-n", str(tokens), "--only", "logits", "-f", "json"]
        label = f"d=256 2 layers, {tokens} tokens"
        (t, m, _), (f, fm, _) = compare(max(3, runs // 3), lambda: run(cmd + ["--no-kv-cache"]), lambda: run(cmd))
        row("e", f"{label} no cache, time", t, f, "s", None, "vs with the KV cache (CLI, --only logits)")
        row("e", f"{label} no cache, RSS", m, fm, "MB", None, "vs with the KV cache")


def table() -> str:
    head = ("", "what", "attncalc", "floor", "ratio", "goal", "", "the floor / note")
    widths = [max(len(str(r[k])) for r in [head, *ROWS]) for k in range(len(head))]
    line = lambda r: "  ".join(
        str(c).ljust(w) if k in (0, 1, 6, 7) else str(c).rjust(w) for k, (c, w) in enumerate(zip(r, widths))
    ).rstrip()
    return "\n".join([line(head), line(tuple("-" * w for w in widths)), *map(line, ROWS)])


# Fresh processes each section starts, counted from the loops above (warm-ups and probes included).
STARTS = {
    "a": lambda runs: 20 * (runs + 1) + 9,
    "b": lambda runs: 4 * (runs + 1) + 2,
    "c": lambda runs: 22 * (runs + 1),
    "e": lambda runs: 2 * (runs + 1) + 2,
}


def duration(runs, sections, sizes) -> str:
    """How long the run will take, said before it starts: the small sections from one start-up timed
    here; the real-size runs of d (and e's generation) are timed when they start."""
    starts = sum(STARTS[s](runs) for s in sections if s in STARTS)
    probe = ATTNCALC + ["softmax", "--example", "woaini", "-f", "json"]
    start_up = min(run(probe)[0] for _ in range(2)) if starts else 0.0  # the second run: bytecode cached
    line = (
        f"This run takes about {starts * start_up / 60:.1f} min for sections {','.join(sorted(sections & set(STARTS)))}"
    )
    line += f" ({starts} start-ups of ~{start_up:.2f} s)"
    if "d" in sections:
        line += (
            f", plus section d: {sizes} real-size block(s), {8 * (max(3, runs // 3) + 1)} runs each, usually several "
            "minutes in all (said per size as it starts; --skip-large leaves it out)"
        )
    if "e" in sections:
        line += ", plus e's 128-token generations (about a minute)"
    return line + ". Every goal that is missed is reported, not failed (exit 0)."


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9, help="runs per figure (median)")
    ap.add_argument("--only", default="a,b,c,d,e", help="sections to run")
    ap.add_argument("--skip-large", action="store_true", help="leave out section d")
    ap.add_argument("--sizes", default="1024x512x8,4096x128x8", help="section d: NxDxHEADS,…")
    ap.add_argument("--cold", action="store_true", help="no bytecode cache (every run compiles attncalc)")
    args = ap.parse_args(argv)
    if args.cold:
        ENV.pop("PYTHONPYCACHEPREFIX")
        ENV["PYTHONDONTWRITEBYTECODE"] = "1"
    sections = set(args.only.split(","))
    if args.skip_large:
        sections.discard("d")
    print(
        f"attncalc: {' '.join(ATTNCALC)}\nPython {sys.version.split()[0]}, {os.cpu_count()} cores (load average "
        f"{os.getloadavg()[0]:.2f} at the start), "
        f"{args.runs} runs per figure (median), bytecode {'not cached' if args.cold else 'cached'}\n",
        flush=True,
    )
    began = time.perf_counter()
    print(duration(args.runs, sections, len(args.sizes.split(","))), flush=True)
    if "a" in sections:
        bench_stages(args.runs)
    if "b" in sections:
        bench_help(args.runs)
    if "c" in sections:
        bench_pipe(args.runs)
    if "d" in sections:
        bench_large(args.runs, [tuple(map(int, size.split("x"))) for size in args.sizes.split(",")])
    if "e" in sections:
        bench_generate(args.runs)
    print(table())
    missed = sum(r[6] == "MISSED" for r in ROWS)
    print(
        f"\n{missed} of {len(ROWS)} figures missed their goal on this machine (load average now "
        f"{os.getloadavg()[0]:.2f}; {time.perf_counter() - began:.0f} s in all)."
        if missed
        else f"\nEvery goal met ({time.perf_counter() - began:.0f} s in all)."
    )
    return 0  # a benchmark reports what it measured; a MISSED figure is news, not a failure of the run


if __name__ == "__main__":
    sys.exit(main())
