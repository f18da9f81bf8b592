"""The input line of the full-screen walk: a cell (`c`), a step (`j`) or a quiz answer, typed while every
other key is the line's text (Ctrl-C still stops); the quiz's question, verdict and score."""

from __future__ import annotations

from textual import events

from attncalc import texts
from attncalc.errors import InputError
from attncalc.learn.walk import label_of, quiz_cell, typed_cell
from attncalc.render.text import expansion_lines, fmt
from attncalc.tui.panel import worked
from attncalc.tui.prose import Prose, words


class Asking:
    """What WalkApp does with the input line (a mixin: the app's widgets, `say`, `place`, `show`)."""

    def action_ask(self, what: str) -> None:
        lang, n = self.walk.lang, len(self.walk.screens)
        prompt = {
            "cell": lambda: texts.t("tui.cell_prompt", lang),
            "step": lambda: texts.t("tui.step_prompt", lang, n=n, stages=", ".join(self.stages())),
        }[what]()
        self.open_input(what, prompt)

    def open_input(self, what: str, prompt: str) -> None:
        self.asking, self.typed = what, ""
        self.say(prompt)
        self.query_one("#ask", Prose).display = True
        self.show_typed()
        self.update_footer()

    def show_typed(self) -> None:
        self.query_one("#ask", Prose).set(words(f"> {self.typed}▏"))

    def close_input(self) -> None:
        self.asking = ""
        self.query_one("#ask", Prose).display = False
        self.update_footer()

    async def on_event(self, event: events.Event) -> None:
        """While the input line is open, keys (and a paste) are its text; Ctrl-C still stops."""
        if self.asking and isinstance(event, events.Paste):
            self.typed += event.text.replace("\n", " ")
            self.show_typed()
        elif self.asking and isinstance(event, events.Key) and not event.is_forwarded and event.key != "ctrl+c":
            if event.key == "enter":
                self.submit(self.typed.strip())
            elif event.key == "escape":
                self.action_cancel()
            elif event.key == "backspace":
                self.typed = self.typed[:-1]
                self.show_typed()
            elif event.is_printable and event.character:
                self.typed += event.character
                self.show_typed()
        else:
            if self.failed and isinstance(event, events.Key):  # the error was read: the arithmetic comes back
                self.close_help()
            await super().on_event(event)

    def action_cancel(self) -> None:
        if self.helping and not self.asking:
            self.close_help()
        elif self.asking == "quiz":
            self.answer("")
        elif self.asking:
            self.close_input()
            self.explain_cursor()

    def stages(self) -> list[str]:
        return list(dict.fromkeys(s.stage for s in self.walk.screens))

    def submit(self, text: str) -> None:
        what = self.asking
        if what == "quiz":
            self.answer(text)
            return
        self.close_input()
        try:
            if what == "cell":
                self.goto_cell(text)
            else:
                self.goto_step(text)
        except InputError as e:
            self.say(f"attncalc: {e}")
            self.failed = True

    def goto_step(self, text: str) -> None:
        stages, n = [s.stage for s in self.walk.screens], len(self.walk.screens)
        if text.isascii() and text.isdigit() and len(text) < 10 and 1 <= int(text) <= n:
            self.show(int(text) - 1)
        elif text in stages:
            self.show(stages.index(text))
        else:
            raise InputError("j", texts.t("tui.no_step", self.walk.lang, n=n), repr(text))

    def goto_cell(self, text: str) -> None:
        """`爱,0` on the step's main tensor or `K:你,1`: the cursor goes there when it is on the step."""
        graph, name, idx, label = typed_cell(self.walk, self.walk.screens[self.k], text)
        for n, g in enumerate(self.grids):
            where = g.matrix.cell_of(idx) if g.matrix.name == name else None
            if where is not None:
                self.current = n
                self.place(where)
                return
        self.say(worked(label, expansion_lines(graph.explain(name, idx), self.p)))

    # ---- the quiz ---------------------------------------------------------------------------------

    def start_quiz(self, s) -> None:
        graph = self.walk.session.graph
        idx = quiz_cell(graph.value(s.quiz).shape)
        self.current = next(n for n, g in enumerate(self.grids) if g.matrix.name == s.quiz and g.matrix.cell_of(idx))
        grid = self.grids[self.current]
        grid.hidden = grid.matrix.cell_of(idx)
        self.asking = "quiz"
        self.place(grid.hidden)
        label = label_of(graph.node(s.quiz), idx)
        self.open_input("quiz", texts.t("tui.quiz_prompt", self.walk.lang, label=label))

    def answer(self, text: str) -> None:
        """The verdict on a typed answer (the rounding paths of the printed quiz and check: attncalc/learn/tolerance.py),
        then the arithmetic."""
        from attncalc.learn.tolerance import judge
        from attncalc.render.check_view import either

        grid, lang = self.grids[self.current], self.walk.lang
        graph, name = self.walk.session.graph, grid.matrix.name
        idx = grid.matrix.index(grid.hidden)
        value = float(graph.value(name)[idx])
        label = label_of(graph.node(name), idx)
        verdict = judge(text, value, graph, name, idx, self.p) if text else None
        if text and verdict is None:
            self.say(texts.ui("quiz_nan", lang))
            return
        if verdict is None:
            said = texts.ui("skipped", lang)
        else:
            ok, accepted = verdict
            said = texts.ui(
                "right" if ok else "wrong",
                lang,
                label=label,
                value=fmt(value, self.p),
                answer=text,
                accepted=either(accepted, lang),
            )
        self.asked[self.k] = None if verdict is None else verdict[0]
        grid.hidden = None
        self.close_input()
        self.verdict = ((self.k, self.current, grid.cursor), said)
        self.place(grid.cursor)
        self.update_footer()
