"""`attncalc walk`: every stage of an example, one screen at a time, with the keys and the quiz.

The screens themselves are `attncalc.learn.walk`. On a terminal the full-screen walk (`attncalc.tui`, Textual)
shows them; otherwise (`--plain`, a pipe, `--no-pause`, `--export`) this module prints them, reads keys
(one key press, no Enter, every key of a burst), asks the quiz questions and saves `--export`. NumPy,
Rich and Textual are imported inside the command body, so `attncalc --help` stays light.
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Optional

import typer

from attncalc import terminal
from attncalc.cli import options as o

HELP = (
    "The whole computation, stage by stage: each screen shows the formula, the matrices and why the step "
    "is there. On a terminal it opens full screen: arrows move a cell cursor, its arithmetic below and its "
    "input cells lit up; n/b next/back, c a cell, j a step, l language, ? help, q quit. With --plain, a pipe or "
    "--no-pause the screens are printed: Enter/space next, b back, c ROW,COL explain a cell, q quit."
)
From = Annotated[
    Optional[str],
    typer.Option(
        "--from",
        help="First stage: embed, pe, qkv, scores, mask, softmax, attend, encoder, decoder, backward, generate.",
        show_default=False,
    ),
]
To = Annotated[Optional[str], typer.Option("--to", help="Last stage (same names as --from).", show_default=False)]
Quiz = Annotated[bool, typer.Option("--quiz", help="Ask you one cell per stage before showing it.")]
Train = Annotated[
    bool,
    typer.Option(
        "--train",
        help="Go on after the loss: the backward pass, one optimiser step and the loss after it "
        "(as --to backward; --from backward starts there).",
    ),
]
NoPause = Annotated[bool, typer.Option("--no-pause", help="Print every screen without waiting for a key.")]
Format = o.format_option("walk")
Plain = Annotated[
    bool, typer.Option("--plain", help="On a terminal too, print the screens one after another instead of full screen.")
]
Export = Annotated[
    Optional[str],
    typer.Option(
        "--export",
        help="Save the whole walk as the terminal shows it, without pausing: FILE.html, or FILE.svg as one "
        "picture per step (FILE-01.svg, …).",
        show_default=False,
    ),
]
Html = Annotated[
    Optional[str],
    typer.Option(
        "--html",
        help="Write the walk as one web page to explore offline (cells' arithmetic, heads, both languages, the "
        "quiz), instead of showing it; - writes it to standard output.",
        show_default=False,
    ),
]


def register(app) -> None:
    app.command("walk", help=HELP)(walk)


def walk(
    example: o.Example = None,
    exercise: o.Exercise = None,
    fixture: o.FixturePath = None,
    fmt: Format = "auto",
    precision: o.Precision = 3,
    lang: o.Lang = None,
    sets: o.Set = None,
    start: From = None,
    end: To = None,
    quiz: Quiz = False,
    no_pause: NoPause = False,
    export: Export = None,
    plain: Plain = False,
    html: Html = None,
    train: Train = False,
    optimizer: o.Optimizer = None,
    lr: o.LearningRate = None,
    model: o.ModelPath = None,
    text: o.Text = None,
    ids: o.Ids = None,
    debug: o.Debug = False,
):
    def run():
        o.quiet_blas_threads(model)
        from attncalc import texts

        check_outputs(fmt, lang, quiz, export, plain, html, no_pause)
        from attncalc.inputs.examples import DEFAULT_EXAMPLE
        from attncalc.learn.walk import open_walk

        name = example
        if not (example or exercise or fixture or model):  # `attncalc walk` alone: the bundled example, said on stderr
            name = DEFAULT_EXAMPLE
            sys.stderr.write(f"attncalc: {texts.t('surprises.default_example', name=name)}\n")
        training = train_options(train, start, end, optimizer, lr)
        w = open_walk(
            name,
            fixture,
            sets or [],
            texts.use(lang),
            start,
            end,
            precision,
            model=dict(model=model, text=text, ids=ids),
            exercise=exercise,
            train=training,
        )
        for message in w.session.graph.warnings:
            terminal.warn(message)
        show(w, fmt, precision, quiz, export, plain, html, no_pause)

    o.guarded(run, debug)


def check_outputs(fmt, lang, quiz: bool, export, plain: bool, html, no_pause: bool) -> None:
    """The output options, before any work: the format and language, and the ones that exclude each other."""
    from attncalc.errors import InputError

    o.check_choices(fmt, None, lang, "walk")
    if fmt == "markdown" and (quiz or export):
        raise InputError("--quiz/--export", "a walk on the terminal (not -f markdown)", "-f markdown")
    if export and not export.lower().endswith((".html", ".svg")):
        raise InputError("--export", "a file name ending in .html or .svg", repr(export))
    if html is not None:
        clash = [
            n
            for n, on in (
                ("-f markdown", fmt == "markdown"),
                ("--export", export),
                ("--plain", plain),
                ("--no-pause", no_pause),
            )
            if on
        ]
        if clash:
            raise InputError("--html", "the page alone (it is not shown on the terminal)", " and ".join(clash))
    for option, path in (("--html", html), ("--export", export)):
        if path and path != "-":
            o.writable_path(path, option)


def show(w, fmt, precision: int, quiz: bool, export, plain: bool, html, no_pause: bool) -> None:
    """The walk as asked: Markdown, the page (--html), the full screen on a terminal, else screen by screen
    (--plain, --no-pause, --export, or not a terminal)."""
    from attncalc import texts
    from attncalc.learn.walk import markdown

    if fmt == "markdown":
        terminal.out(markdown(w, precision))
        return
    if html == "-":  # as everywhere else, - is a standard stream: the page on stdout
        from attncalc.learn.walk_page import page_html

        terminal.out(page_html(w, quiz), document=True)
        return
    if html is not None:
        from attncalc.learn.walk_page import save_page

        size = len(save_page(w, html, quiz).encode("utf-8"))
        sys.stderr.write(f"attncalc: {texts.t('page.wrote', path=html, size=size)}\n")
        return
    if not (plain or no_pause or export) and on_terminal():
        from attncalc.cli.busy import SPINNER
        from attncalc.tui.app import run as run_full_screen

        SPINNER.stop()  # the full screen is Textual's from here
        texts.use(w.lang)
        code = run_full_screen(w, quiz)
        if code:
            raise typer.Exit(code)
        return
    from attncalc.render.table import console

    con = console(record=bool(export), truecolor=bool(export))
    pause = not (no_pause or export) and all(
        s is not None and s.isatty() for s in (sys.stdin, sys.stdout)
    )  # None: closed
    tour = Tour(w, con, precision, pause, quiz, pages=[] if export and export.lower().endswith(".svg") else None)
    try:
        tour.run()
    finally:
        if export:
            save(con, export, tour.pages)


def train_options(train: bool, start, end, optimizer, lr) -> dict | None:
    """--train (or --from/--to backward) and the optimiser it takes (None: the walk ends with the loss)."""
    from attncalc.core.names import FORWARD_STAGES
    from attncalc.errors import InputError

    train = train or "backward" in (start, end)
    if not train and (optimizer is not None or lr is not None):
        given = "--optimizer" if optimizer is not None else "--lr"
        raise InputError(given, "--train with it (the optimiser step comes after the backward pass)", "no --train")
    if train and end in FORWARD_STAGES:
        raise InputError("--train", "a walk that reaches the backward pass (--to backward or generate)", f"--to {end}")
    return {"optimizer": optimizer, "lr": lr} if train else None


def on_terminal() -> bool:
    """stdin, stdout and stderr all terminals (a closed one is None), and one that can draw a full screen."""
    streams = (sys.stdin, sys.stdout, sys.stderr)
    return all(s is not None and s.isatty() for s in streams) and os.environ.get("TERM", "dumb") not in ("dumb", "")


def save(con, path: str, pages: list[str] | None) -> None:
    """--export: the page, or (FILE.svg) one picture per screen shown, FILE-01.svg, FILE-02.svg, …"""
    from attncalc import texts
    from attncalc.errors import not_written
    from attncalc.render import export

    try:
        if pages is None:
            export.save_html(con, path)
            return
        pages.append(export.svg_page(con, f"attncalc walk · {len(pages) + 1}"))
        written = export.save_svgs(pages, path)
        sys.stderr.write(f"attncalc: {texts.t('page.svg_wrote', n=len(written), first=written[0], last=written[-1])}\n")
    except OSError as e:
        raise not_written(e, path, path, "a file --export can write") from None


KEYS = {
    "\r": "next",
    "\n": "next",
    " ": "next",
    "n": "next",
    "\x1b[C": "next",
    "\x1b[B": "next",
    "b": "back",
    "p": "back",
    "\x1b[D": "back",
    "\x1b[A": "back",
    "q": "quit",
    "\x04": "quit",
    "\x1b": "quit",
    "c": "cell",
    "?": "help",
    "h": "help",
}


class KeyReader:
    """Key presses from the terminal (cbreak mode: no Enter needed, Ctrl-C still interrupts), one at a time.

    A read may return several keys typed in one burst (`nnnn`, a pasted `c 爱,0⏎`): the rest is kept for
    the next calls, so every key counts."""

    def __init__(self):
        self.pending = ""

    def fill(self) -> None:
        try:
            import termios
            import tty
        except ImportError:  # no termios (Windows): a line at a time, its Enter only ending it
            line = sys.stdin.readline()
            self.pending += line.rstrip("\r\n") or line
            return
        fd = sys.stdin.fileno()
        old = termios.tcgetattr(fd)
        try:
            tty.setcbreak(fd)
            self.pending += os.read(fd, 1024).decode("utf-8", "replace")
        finally:
            termios.tcsetattr(fd, termios.TCSADRAIN, old)
            sys.stderr.write("\r\x1b[K")

    def key(self, prompt: str) -> str:
        """The next action (a value of KEYS, "unknown" or "quit" at the end of input)."""
        if not self.pending:
            sys.stderr.write(prompt)
            sys.stderr.flush()
            self.fill()
        if not self.pending:
            return "quit"
        if self.pending.startswith("\x1b[") and len(self.pending) >= 3:
            key, self.pending = self.pending[:3], self.pending[3:]
        else:
            key, self.pending = self.pending[0].lower(), self.pending[1:]
        return KEYS.get(key, "unknown")

    def line(self, prompt: str) -> str | None:
        """The rest of a line: what the burst already holds up to its newline, else that and a line read
        now (echoed, with editing). None at the end of input."""
        if "\n" in self.pending or "\r" in self.pending:
            head, _, self.pending = self.pending.replace("\r\n", "\n").replace("\r", "\n").partition("\n")
            return head
        head, self.pending = self.pending, ""
        sys.stderr.write(prompt + head)
        sys.stderr.flush()
        typed = sys.stdin.readline()
        return None if not typed and not head else head + typed.rstrip("\n")


class Tour:
    """The walk on a terminal: draw a screen, wait for a key, go on (or back); the quiz on the way."""

    def __init__(self, walk, con, precision: int, pause: bool, quiz: bool, pages: list[str] | None = None):
        self.w, self.con, self.p, self.pause, self.quiz = walk, con, precision, pause, quiz
        self.pages = pages  # --export FILE.svg: each screen as it was shown, a picture each
        self.asked: set[int] = set()
        self.right = self.answered = 0
        self.keys = KeyReader()

    def say(self, key: str, **kw) -> None:
        sys.stderr.write(self.text(key, **kw) + "\n")

    def run(self) -> None:
        from attncalc.learn.walk import draw

        k, screens = 0, self.w.screens
        while k < len(screens):
            ask = self.ask if self.quiz and k not in self.asked else None
            self.asked.add(k)
            if self.pages is not None and self.con.export_text(clear=False).strip():
                from attncalc.render.export import svg_page

                self.pages.append(svg_page(self.con, f"attncalc walk · {len(self.pages) + 1}"))
            draw(self.con, self.w, k, self.p, ask)
            if not self.pause:
                k += 1
                continue
            k = self.wait(k)
            if k is None:
                break
        else:
            from attncalc.render.table import print_paragraph

            for note in self.w.notes:
                print_paragraph(self.con, note)
        if self.answered:
            self.con.print(self.text("score", right=self.right, asked=self.answered), markup=False)

    def text(self, key: str, **kw) -> str:
        from attncalc import texts

        return texts.ui(key, self.w.lang, **kw)

    def wait(self, k: int) -> int | None:
        """The next screen's index after the keys pressed on screen k; None to quit."""
        from attncalc.errors import InputError
        from attncalc.learn.walk import cell
        from attncalc.render.table import print_explanation

        while True:
            action = self.keys.key(self.text("keys") + " ")
            if action == "next":
                return k + 1
            if action == "quit":
                return None
            if action == "back":
                if k > 0:
                    return k - 1
                self.say("first")
            elif action == "cell":
                line = self.keys.line(self.text("cell_prompt"))
                if line is None:
                    return None
                try:
                    label, exp = cell(self.w, self.w.screens[k], line.strip())
                    print_explanation(self.con, label, exp, self.p)
                except InputError as e:
                    sys.stderr.write(f"attncalc: {e}\n")
            else:
                self.say("keys")

    def ask(self, s) -> list[str]:
        """One quiz question on screen s (when it has one): its inputs, your number, the verdict and the
        arithmetic. Returns the tensors drawn with the question."""
        from attncalc.learn.tolerance import judge
        from attncalc.learn.walk import label_of, quiz_cell, views_of
        from attncalc.render.check_view import either
        from attncalc.render.table import print_explanation, print_views
        from attncalc.render.text import fmt

        if s.quiz is None:
            return []
        g = self.w.session.graph
        node, value = g.node(s.quiz), g.value(s.quiz)
        inputs = [i for i in node.inputs if not g.nodes[i].is_leaf and i not in s.tensors]
        before = s.tensors[: s.tensors.index(s.quiz)] if s.quiz in s.tensors else []
        print_views(self.con, views_of(self.w, inputs + before), self.p)
        idx = quiz_cell(value.shape)
        label, true = label_of(node, idx), float(value[idx])
        verdict = None
        while True:
            line = self.keys.line(self.text("quiz_ask", label=label))
            if line is None:  # no more answers (end of input): the quiz stops, the walk goes on
                self.quiz = False
                return before
            if not line.strip():
                self.con.print(self.text("skipped"), markup=False)
                break
            verdict = judge(line, true, g, s.quiz, idx, self.p)
            if verdict is not None:
                break
            self.say("quiz_nan")
        if verdict is not None:
            ok, accepted = verdict
            self.answered += 1
            self.right += ok
            self.con.print(
                self.text(
                    "right" if ok else "wrong",
                    label=label,
                    value=fmt(true, self.p),
                    answer=line.strip(),
                    accepted=either(accepted, self.w.lang),
                ),
                markup=False,
            )
        print_explanation(self.con, label, g.explain(s.quiz, idx), self.p)
        self.con.print()
        return before
