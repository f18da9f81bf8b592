"""Every command README and docs/ show, run as a person runs it: stderr on a real (pseudo-)terminal with the
spinner forced (ATTNCALC_PROGRESS_AFTER=0), stdout into a file, into a pipe and onto the terminal. What it
writes to stdout and to files is byte for byte what the same command writes with no terminal at all, its
exit code is the same, and nothing crashes (issue 34: a shown spinner sent the JSON to the terminal and
`attncalc examples` ended in a segmentation fault). The commands run two at a time (the machine has two
cores), each in a directory of its own. README's test command runs README's own lines and others evenly spread,
a fifth of them; CI's profile every one (tests/profiles.py, .ci/run's second pass)."""

import fcntl
import json
import os
import pty
import re
import shlex
import shutil
import struct
import subprocess
import sys
import termios
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from profiles import examples
from test_docs import COMMAND, PAGES, SYNOPSIS, shell_lines

ROOT = Path(__file__).resolve().parent.parent
HANG = 600  # seconds: a guard against a hang on a busy machine, never a measure of speed
PROGRAMS = {"attncalc", ".venv/bin/attncalc", "jq"}  # a documented line of other programs is not ours to run
MODES = ("file", "pipe", "terminal")  # where stdout goes; stderr is on the terminal in each
ENV = {
    **os.environ,
    "PYTHONPATH": str(ROOT),
    "ATTNCALC_PROGRESS_AFTER": "0",  # the spinner shows whatever the machine's speed
    "COLUMNS": "100",
    "LINES": "30",
    "TERM": "xterm-256color",
    "LANG": "C.UTF-8",
}
ENV.pop("ATTNCALC_DEBUG", None)
ENV.pop("NO_COLOR", None)


def runnable(line: str) -> str | None:
    """The shell line to run for a documented command line: up to its first `&&` or `;` (xelatex, a venv),
    attncalc as `python -m attncalc` of this tree; None when a stage is another program, when it names
    a model by a variable ($M: real checkpoints) or when it is a pattern (`--seed N`)."""
    if SYNOPSIS.search(line) or "$" in line:
        return None
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    for k, token in enumerate(tokens):
        if token in ("&&", ";", "||", "&"):
            tokens = tokens[:k]
            break
    stages, start = [], 0
    for k, token in enumerate([*tokens, "|"]):
        if token == "|":
            stages.append(tokens[start:k])
            start = k + 1
    if not tokens or any(not stage or stage[0] not in PROGRAMS for stage in stages):
        return None
    python = f"{shlex.quote(sys.executable)} -m attncalc"
    words = [
        python if w in ("attncalc", ".venv/bin/attncalc") else w if w in ("|", ">", ">>", "<") else shlex.quote(w)
        for w in tokens
    ]
    return " ".join(words)


def documented_lines() -> list[tuple[str, bool]]:
    """Each distinct command line of README and docs/ (code blocks, console demos, inline code) we can run,
    and whether README shows it."""
    seen: dict[str, tuple] = {}  # the line to run: the line as written (once: a comment makes no other command)
    for page in PAGES:
        for line, _ in shell_lines(page):
            if COMMAND.search(line.strip()) and runnable(line.strip()) is not None:
                seen.setdefault(runnable(line.strip()), (line.strip(), page == PAGES[0]))
    return [(line, readme) for line, readme in seen.values() if "jq" not in line or shutil.which("jq")]


def chosen(lines: list[tuple[str, bool]], count: int) -> list[str]:
    """README's lines and the others evenly spread, `count` in all or README's alone when they are more
    (README's test command runs a fifth of them, CI's profile every one: tests/profiles.py)."""
    first = [line for line, readme in lines if readme]
    rest = [line for line, readme in lines if not readme]
    more = max(0, count - len(first))
    return first + [rest[k * len(rest) // more] for k in range(more)] if more < len(rest) else first + rest


DOCUMENTED = documented_lines()
LINES = chosen(DOCUMENTED, examples(len(DOCUMENTED)))


def _terminal():
    """A pseudo-terminal of 100 × 30: (master, slave)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    return master, slave


def _drain(fd: int, into: list) -> threading.Thread:
    def read():
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # EIO: every writer of the terminal has closed it
                return
            if not chunk:
                return
            into.append(chunk)

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    return thread


def _workdir(base: Path) -> Path:
    """A directory of the clone's shape for one run: examples/ and attncalc/ (a document path) linked,
    my-model/schemas/ for `schema fixture > my-model/schemas/…`."""
    base.mkdir(parents=True)
    for name in ("examples", "attncalc"):
        (base / name).symlink_to(ROOT / name)
    (base / "my-model" / "schemas").mkdir(parents=True)
    return base


def _files(base: Path) -> dict[str, bytes]:
    """The files a run wrote in its directory."""
    return {
        str(p.relative_to(base)): p.read_bytes()
        for p in base.rglob("*")
        if p.is_file() and not any(part in ("examples", "attncalc") for part in p.relative_to(base).parts[:1])
    }


def run(line: str, where: str | None, base: Path) -> dict:
    """Run the line: where=None with no terminal anywhere (stdout and stderr into files); else stderr on a
    pseudo-terminal and stdout into "file", "pipe" or onto the "terminal". Its exit code, stdout (not for
    "terminal"), the files it wrote, what the terminal got."""
    cwd = _workdir(base)
    shown: list = []
    master = slave = None
    out_path = base.parent / f"{base.name}.stdout"
    with open(out_path, "wb") as out_file, open(base.parent / f"{base.name}.stderr", "wb") as err_file:
        if where is None:
            stdout, stderr = out_file, err_file
        else:
            master, slave = _terminal()
            stdout, stderr = {"file": out_file, "pipe": subprocess.PIPE, "terminal": slave}[where], slave
        child = subprocess.Popen(
            ["/bin/sh", "-c", runnable(line)], cwd=cwd, env=ENV, stdin=subprocess.DEVNULL, stdout=stdout, stderr=stderr
        )
        reader = None
        if slave is not None:
            os.close(slave)
            reader = _drain(master, shown)
        piped = child.communicate(timeout=HANG)[0] if where == "pipe" else None
        code = child.wait(timeout=HANG)
        if reader is not None:
            reader.join(HANG)
            os.close(master)
    written = piped if where == "pipe" else None if where == "terminal" else out_path.read_bytes()
    return {"code": code, "stdout": written, "files": _files(cwd), "terminal": b"".join(shown)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every line in every way, two runs at a time: {(line, where): result}."""
    base = tmp_path_factory.mktemp("terminal")
    jobs = [(line, where) for line in LINES for where in (None, *MODES)]
    with ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda job: run(job[0], job[1], base / f"run{jobs.index(job)}"), jobs)
        return dict(zip(jobs, done))


def test_the_layer_runs_every_documented_command():
    assert len(DOCUMENTED) >= 45, DOCUMENTED
    readme = sum(1 for _, mine in DOCUMENTED if mine)
    assert len(LINES) == max(readme, examples(len(DOCUMENTED))) and len(set(LINES)) == len(LINES)
    assert set(LINES) >= {line for line, readme in DOCUMENTED if readme}  # README's own, always
    assert any("jq" in line for line in LINES) or not shutil.which("jq")


@pytest.mark.parametrize("line", LINES)
def test_a_documented_command_writes_the_same_with_its_stderr_on_a_terminal(runs, line):
    plain = runs[(line, None)]
    assert plain["code"] in (0, 1, 2), f"{line}: exit {plain['code']} without a terminal"
    for where in MODES:
        got = runs[(line, where)]
        assert got["code"] == plain["code"], f"{line}: stdout to {where}: exit {got['code']}, {plain['code']} alone"
        assert got["files"] == plain["files"], f"{line}: stdout to {where}: the files it wrote differ"
        if where != "terminal":
            assert got["stdout"] == plain["stdout"], f"{line}: stdout to a {where} differs from the run alone"


def test_the_spinner_showed_on_the_terminal(runs):
    """The layer tests what it says: with the threshold at 0 the spinner drew on stderr in most runs."""
    drawn = [line for line in LINES if "working…".encode() in runs[(line, "file")]["terminal"]]
    assert len(drawn) >= len(LINES) // 2, drawn


def test_readmes_pipe_with_every_spinner_shown_ends_in_jq_with_the_attention_weights(runs):
    if not shutil.which("jq"):
        pytest.skip("no jq")
    (line,) = [line for line in LINES if line.endswith("jq '.tensors.A'")]
    for where in ("file", "pipe"):
        weights = json.loads(runs[(line, where)]["stdout"])
        assert runs[(line, where)]["code"] == 0
        assert len(weights) == 3 and all(len(row) == 3 for row in weights)  # 我 爱 你 attending to themselves
        assert all(abs(sum(row) - 1) < 1e-9 for row in weights)  # softmax rows
        assert all(w == 0 for k, row in enumerate(weights) for w in row[k + 1 :])  # the causal mask


def test_examples_on_a_terminal_exits_0_and_lists_them(tmp_path):
    got = run("attncalc examples", "terminal", tmp_path / "examples")
    assert got["code"] == 0
    screen = got["terminal"].decode()
    assert "woaini" in screen and "tinyllama" in screen


def _pane_after(command: str, tmp_path: Path) -> str:
    """The tmux screen after `command` ran in it with the spinner forced (stdout and stderr both there)."""
    if not shutil.which("tmux"):
        pytest.skip("no tmux")
    socket = f"attncalc-term-{os.getpid()}-{tmp_path.name}"
    env = " ".join(f"{k}={shlex.quote(ENV[k])}" for k in ("PYTHONPATH", "ATTNCALC_PROGRESS_AFTER", "LANG"))
    done = tmp_path / "done"
    script = f"cd {shlex.quote(str(tmp_path))} && env {env} {command}; echo EXIT=$? > {done}; sleep 60"
    tmux = ["tmux", "-L", socket]
    subprocess.run([*tmux, "new-session", "-d", "-x", "100", "-y", "40", script], check=True)
    try:
        waited = subprocess.run(["timeout", str(HANG), "sh", "-c", f"while [ ! -s {done} ]; do sleep 0.1; done"])
        assert waited.returncode == 0, "the command did not end"
        return subprocess.run([*tmux, "capture-pane", "-p"], capture_output=True, text=True, check=True).stdout
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True)


def test_the_spinner_is_off_the_screen_before_the_output_comes(tmp_path):
    python = shlex.quote(sys.executable)
    screen = _pane_after(f"{python} -m attncalc softmax --example woaini --only A --no-work", tmp_path)
    assert "A = softmax(S_masked) per row" in screen
    assert "working" not in screen
    assert re.search(r"^A = softmax", screen, re.M)  # the title's line starts where the spinner was
