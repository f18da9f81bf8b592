"""`--help` and the CLI module must not import NumPy: every command pays Python's start-up in a pipe."""

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import sys
from attncalc.cli.app import app
try:
    app([{args}], prog_name="attncalc")
except SystemExit:
    pass
print("NUMPY" if "numpy" in sys.modules else "CLEAN")
"""


@pytest.mark.parametrize(
    "args", ["", "'--help'", "'softmax', '--help'", "'qkv', '--help'", "'cost', '--help'", "'--version'"]
)
def test_help_does_not_import_numpy(args):
    run = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True)
    assert run.stdout.strip().splitlines()[-1] == "CLEAN", run.stdout + run.stderr


def test_a_stage_does_import_numpy_and_works():
    run = subprocess.run(
        [sys.executable, "-c", PROBE.format(args="'softmax', '--scores', '1 2', '-f', 'json'")],
        capture_output=True,
        text=True,
    )
    assert run.stdout.strip().splitlines()[-1] == "NUMPY"
    assert '"A": [[0.2689414213699951, 0.7310585786300049]]' in run.stdout


def test_every_command_is_documented(cli):
    out = cli("--help").stdout
    for command in (
        "embed",
        "pe",
        "qkv",
        "scores",
        "mask",
        "softmax",
        "attend",
        "encoder",
        "decoder",
        "generate",
        "walk",
        "check",
        "kvcache",
        "cost",
        "examples",
    ):
        assert f" {command} " in out, command
        sub = cli(command, "--help")
        assert sub.exit_code == 0 and "Usage" in sub.stdout


def test_the_sizing_commands_do_not_import_numpy():
    # kvcache and cost are arithmetic on a config: Python's start-up only (issue 15)
    import os

    config = repr(os.path.join(os.path.dirname(os.path.abspath(__file__)), "configs", "llama-3-8b.json"))
    for args in (
        f"'cost', {config}, '--prompt', '8', '--generate', '8', '--gpu', 'L4', '-f', 'json'",
        f"'kvcache', {config}, '--tokens', '8', '-f', 'json'",
    ):
        run = subprocess.run([sys.executable, "-c", PROBE.format(args=args)], capture_output=True, text=True)
        assert run.stdout.strip().splitlines()[-1] == "CLEAN", run.stdout + run.stderr
        assert '"kv_bytes"' in run.stdout or '"bytes"' in run.stdout


MODULES_PROBE = """
import sys
from attncalc.cli.app import app
try:
    app([{args}], prog_name="attncalc")
except SystemExit:
    pass
print(" ".join(m for m in ("gguf", "yaml", "numpy.ma") if m in sys.modules) or "CLEAN")
"""


def test_a_safetensors_model_imports_neither_gguf_nor_what_it_needs(tmp_path):
    # gguf (76 ms, and yaml with it) reads .gguf files only; np.unique would bring numpy.ma (16 ms)
    for package in ("gguf", "safetensors", "tokenizers"):
        pytest.importorskip(package)
    import crafted

    folder = crafted.folder(tmp_path / "model")
    args = f"'decoder', '--model', {folder!r}, '--ids', '1 2 3', '-f', 'json', '--only', 'dec_out'"
    run = subprocess.run([sys.executable, "-c", MODULES_PROBE.format(args=args)], capture_output=True, text=True)
    assert run.stdout.strip().splitlines()[-1] == "CLEAN", run.stdout[-500:] + run.stderr
    assert '"dec_out"' in run.stdout


TEXTUAL_PROBE = """
import sys
from attncalc.cli.app import app
try:
    app([{args}], prog_name="attncalc")
except SystemExit:
    pass
print("TEXTUAL" if any(m == "textual" or m.startswith(("textual.", "attncalc.tui")) for m in sys.modules) else "CLEAN")
"""


@pytest.mark.parametrize(
    "args",
    [
        "'--help'",
        "'walk', '--help'",
        "'softmax', '--example', 'woaini'",
        "'walk', '--example', 'woaini', '--to', 'pe'",  # not a terminal: the printed walk
        "'walk', '--example', 'woaini', '-f', 'markdown'",
    ],
)
def test_only_the_full_screen_walk_loads_textual(args):
    run = subprocess.run(
        [sys.executable, "-c", TEXTUAL_PROBE.format(args=args)],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
    )
    assert run.stdout.strip().splitlines()[-1] == "CLEAN", run.stdout[-500:] + run.stderr


# ---- the exit: no interpreter teardown, nothing lost -----------------------------------------------

LEAVE = """
import atexit, sys, threading, time
from attncalc.cli.options import leave
atexit.register(lambda: print("atexit ran"))
if sys.argv[1] == "thread":  # a thread still working: the normal exit, which waits for it
    threading.Thread(target=lambda: (time.sleep(0.3), print("thread done"))).start()
if sys.argv[1] == "daemon":  # a daemon thread (core/products.py's second core): ended, never waited for
    threading.Thread(target=lambda: (time.sleep(30), print("daemon done")), daemon=True).start()
if sys.argv[1] != "thread":  # the interpreter's normal exit would print this; the quick exit never does
    threading._register_atexit(lambda: print("normal exit"))
print("out " * 100_000, end="")
leave(int(sys.argv[2]))
"""


@pytest.mark.parametrize("code", [0, 3])
@pytest.mark.parametrize("threads", ["plain", "daemon"])
def test_leave_keeps_the_output_the_atexit_handlers_and_the_code(code, threads):
    run = subprocess.run([sys.executable, "-c", LEAVE, threads, str(code)], capture_output=True, text=True, timeout=20)
    assert run.returncode == code
    assert run.stdout == "out " * 100_000 + "atexit ran\n" and run.stderr == ""


def test_leave_waits_for_a_running_thread():
    run = subprocess.run([sys.executable, "-c", LEAVE, "thread", "0"], capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.endswith("thread done\natexit ran\n")


def test_the_program_writes_a_large_document_whole_through_a_pipe():
    run = subprocess.run(
        [sys.executable, "-m", "attncalc", "attend", "--example", "tinyllama", "-f", "json"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["tensors"]["Z"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize("fmt", ["json", "table"])
def test_a_full_disk_is_exit_74_not_an_internal_error(fmt):
    with open("/dev/full", "w") as full:
        run = subprocess.run(
            [sys.executable, "-m", "attncalc", "softmax", "--example", "woaini", "-f", fmt],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert run.returncode == 74
    assert run.stderr == "attncalc: error: standard output: No space left on device\n"
