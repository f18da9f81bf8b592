"""Every reader is bounded (issue 19, must-show 3): an endless stream (`yes |`, /dev/zero), a FIFO and a forged
reference each end with exit 2 and one line naming the file, in a real process whose CPU time and memory are
limited and measured. The limits are hang guards, not speed tests: an unbounded reader spins (CPU), grows
(memory) or blocks (the wall-clock guard), and each of those fails here on any machine."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import attncalc

ROOT = Path(__file__).resolve().parent.parent
CPU_SECONDS = 5  # what "ends within 5 s" means on a machine busy with other work: 5 s of its own CPU
WALL_SECONDS = 300  # a reader blocked on a FIFO uses no CPU: this guard ends it (a hang guard, not a speed test)
PEAK_MB = 500
MiB = 1 << 20


# A small launcher runs attncalc as its own child, with the limits, and reports that child's CPU time and
# peak resident size: measured on a process forked from pytest, the peak would start at pytest's own (~1 GB
# once earlier tests have loaded torch), since a forked child's high-water mark includes its parent's pages.
LAUNCH = f"""
import json, os, resource, subprocess, sys
def limits():
    resource.setrlimit(resource.RLIMIT_CPU, ({CPU_SECONDS}, {CPU_SECONDS + 1}))
    resource.setrlimit(resource.RLIMIT_AS, ({2048 * MiB}, {2048 * MiB}))  # a safety net: the measure is below
child = subprocess.Popen([sys.executable, "-m", "attncalc", *sys.argv[2:]], preexec_fn=limits)
_, status, usage = os.wait4(child.pid, 0)
with open(sys.argv[1], "w") as f:
    json.dump([usage.ru_utime + usage.ru_stime, usage.ru_maxrss], f)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run(*args, stdin=subprocess.DEVNULL, shell_stdin: str | None = None, tmp: Path) -> tuple[int, str, float, float]:
    """(exit code, stderr, CPU seconds, peak resident MB) of `attncalc ARGS` in a limited child, measured
    on that child alone (wait4); `shell_stdin` is a command whose output is piped in (`yes`)."""
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    env.pop("ATTNCALC_DEBUG", None)
    feeder = None
    if shell_stdin is not None:
        feeder = subprocess.Popen(shell_stdin, shell=True, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        stdin = feeder.stdout
    measured = tmp / "measured.json"
    with open(tmp / "stderr", "w+b") as err:
        kw = {"stdin": stdin, "stdout": subprocess.DEVNULL, "stderr": err, "env": env, "start_new_session": True}
        proc = subprocess.Popen([sys.executable, "-c", LAUNCH, str(measured), *map(str, args)], cwd=ROOT, **kw)
        if feeder is not None:
            feeder.stdout.close()  # the child holds the pipe now
        try:
            proc.wait(timeout=WALL_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # the launcher and attncalc under it
            proc.wait()
            pytest.fail(f"attncalc {' '.join(map(str, args))}: still running after {WALL_SECONDS} s")
        finally:
            if feeder is not None:
                feeder.kill()
                feeder.wait()
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    cpu, peak_kb = json.loads(measured.read_text())
    return proc.returncode, stderr, cpu, peak_kb / 1024  # KB on Linux


def bounded(*args, tmp: Path, **kw) -> str:
    """Run, and assert the bounded ending: exit 2 with one line, within the CPU and memory bounds; its stderr."""
    code, stderr, cpu, peak = run(*args, tmp=tmp, **kw)
    assert code == 2, f"exit {code} ({128 + signal.SIGXCPU} is the CPU limit): {stderr[-300:]}"
    assert stderr.startswith("attncalc: error: ") and stderr.count("\n") == 1, stderr[-300:]
    assert cpu < CPU_SECONDS and peak < PEAK_MB, f"{cpu:.1f} s of CPU, {peak:.0f} MB"
    return stderr


@pytest.fixture
def fifo(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    path = tmp_path / "named.pipe"
    os.mkfifo(path)
    return path


def forged_reference(tmp_path) -> Path:
    """A pipe document whose fixture reference names /dev/zero, with a fingerprint that would match the
    empty size a device reports."""
    path = tmp_path / "forged.json"
    ref = {"path": "/dev/zero", "size": 0, "sha256_ends": "0" * 64}
    path.write_text(json.dumps({"attncalc": 1, "fixture": {"file": ref}, "tensors": {}, "options": {}}))
    return path


def test_yes_piped_into_a_stage_ends_at_its_first_chunk(tmp_path):
    err = bounded("softmax", shell_stdin="yes", tmp=tmp_path)
    assert err.startswith("attncalc: error: <stdin>: expected a JSON document (starting with {), found 'y\\ny")


def test_yes_piped_into_check_ends_at_the_worksheet_limit(tmp_path):
    err = bounded("check", "-", "--example", "woaini", shell_stdin="yes", tmp=tmp_path)
    assert "<stdin>: expected a worksheet of at most 16 MiB (docs/limits.md)" in err


READERS = [  # every command that reads a file named on its command line, and the kind of file it reads
    (["softmax", "--fixture", "{path}"], "fixture"),
    (["softmax", "{path}"], "document"),
    (["check", "{path}", "--example", "woaini"], "worksheet"),
    (["kvcache", "{path}", "--tokens", "8"], "config"),
    (["cost", "{path}", "--prompt", "8", "--generate", "8", "--gpu", "H100-SXM"], "config"),
]


@pytest.mark.parametrize("args, kind", READERS)
@pytest.mark.parametrize("which", ["/dev/zero", "a FIFO"])
def test_a_device_or_a_fifo_is_refused_without_reading_or_waiting(args, kind, which, tmp_path, request):
    path = "/dev/zero" if which == "/dev/zero" else request.getfixturevalue("fifo")
    found = "a character device" if which == "/dev/zero" else "a FIFO (named pipe)"
    err = bounded(*[a.format(path=path) for a in args], tmp=tmp_path)
    assert f"{path}: expected a regular {kind} file, found {found}" in err


def test_dev_zero_on_standard_input_is_refused_as_binary(tmp_path):
    with open("/dev/zero", "rb") as zero:
        err = bounded("softmax", stdin=zero, tmp=tmp_path)
    assert "<stdin>: expected a text document (UTF-8), found binary data (a NUL byte at offset 0)" in err


def test_a_forged_reference_to_dev_zero_is_refused_before_reading_it(tmp_path):
    err = bounded("softmax", forged_reference(tmp_path), tmp=tmp_path)
    assert "forged.json: fixture.file: expected the file /dev/zero, found a character device" in err


def test_the_api_refuses_the_same_files_with_the_same_words(tmp_path, fifo):
    with pytest.raises(attncalc.InputError, match="/dev/zero: expected a regular fixture file, found a character"):
        attncalc.load(fixture="/dev/zero")
    with pytest.raises(attncalc.InputError, match="expected a regular fixture file, found a FIFO"):
        attncalc.load(fixture=str(fifo))
    with pytest.raises(attncalc.InputError, match="fixture.file: expected the file /dev/zero, found a character"):
        attncalc.load(forged_reference(tmp_path))
    calc = attncalc.load("woaini", stage="attend")
    for path, found in (("/dev/zero", "a character device"), (str(fifo), "a FIFO")):
        with pytest.raises(attncalc.InputError, match=f"expected a regular worksheet file, found {found}"):
            calc.check(path)


def test_a_model_folder_whose_config_is_a_fifo_is_named(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    folder = tmp_path / "model"
    folder.mkdir()
    os.mkfifo(folder / "config.json")
    err = bounded("kvcache", folder, "--tokens", "8", tmp=tmp_path)
    assert f"{folder}/config.json: expected a regular config file, found a FIFO (named pipe)" in err


def test_a_gguf_that_is_a_device_or_a_fifo_is_refused_without_mapping_it(tmp_path):
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    zero, fifo, folder = tmp_path / "zero.gguf", tmp_path / "fifo.gguf", tmp_path / "model"
    zero.symlink_to("/dev/zero")
    os.mkfifo(fifo)
    folder.mkdir()
    os.mkfifo(folder / "only.gguf")
    for args, path, found in (
        (["kvcache", zero, "--tokens", "8"], zero, "a character device"),
        (["kvcache", fifo, "--tokens", "8"], fifo, "a FIFO (named pipe)"),
        (["cost", folder, "--prompt", "8", "--generate", "8", "--gpu", "H100-SXM"], folder / "only.gguf", "a FIFO"),
    ):
        assert f"{path}: expected a regular GGUF file, found {found}" in bounded(*args, tmp=tmp_path)


def test_a_gguf_that_is_a_device_is_named_as_one_without_the_gguf_package(tmp_path):
    """README's test command installs no `models` extra: the file's kind is checked before gguf is asked for."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    zero, fifo, short = tmp_path / "zero.gguf", tmp_path / "fifo.gguf", tmp_path / "short.gguf"
    zero.symlink_to("/dev/zero")
    os.mkfifo(fifo)
    short.write_bytes(b"GGUF")
    block = "import sys; sys.modules['gguf'] = sys.modules['gguf.constants'] = None; sys.argv[0] = 'attncalc'; "
    run = block + "from attncalc.cli.app import program; program()"
    for path, found in (
        (zero, "expected a regular GGUF file, found a character device"),
        (fifo, "expected a regular GGUF file, found a FIFO (named pipe)"),
        (short, "expected the gguf package to read a GGUF file"),
    ):
        done = subprocess.run(
            [sys.executable, "-c", run, "kvcache", str(path), "--tokens", "8"],
            capture_output=True,
            text=True,
            timeout=120,
            cwd=Path(__file__).parent.parent,
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr[-300:]
        assert done.stderr.startswith(f"attncalc: error: {path}: {found}"), done.stderr
