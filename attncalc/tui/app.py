"""The full-screen walk: the screens of `attncalc.walk`, one at a time, to explore with a cell cursor.

A step list (hidden below 90 columns), a pinned header (step, title, formulas), a scrolling body (why,
the inputs from earlier steps, the weights, the tensors made here), a pinned panel with the arithmetic
of the cell under the cursor (the Expansion every renderer uses) and a footer with the keys. The input
cells of the highlighted cell (`Graph.operands`) are lit up in the matrices they come from.
"""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.geometry import Region
from textual.widgets import OptionList, Static

from attncalc import texts
from attncalc.errors import InputError
from attncalc.render.text import expansion_lines, fmt
from attncalc.tui.grid import Matrix, MatrixGrid, matrices
from attncalc.tui.panel import arithmetic, light_background, wrapped
from attncalc.walk import cell, label_of, made_by, quiz_cell, tell

NARROW = 90  # below this width the step list is hidden


class Body(VerticalScroll, can_focus=False):
    """The scrolling part; keys move the cell cursor, so it never takes the focus."""


class WalkApp(App):
    CSS = """
    Screen { layout: vertical; }
    #main { height: 1fr; }
    #steps { width: 30; border: none; border-right: solid $primary; text-wrap: nowrap; text-overflow: ellipsis; }
    #right { width: 1fr; }
    #header { height: auto; max-height: 8; border-bottom: solid $primary; }
    #body { height: 1fr; overflow-x: auto; }
    #body Static { width: 100%; }
    .section { text-style: italic; margin-top: 1; }
    .title { text-style: bold; margin-top: 1; }
    #panel { height: auto; max-height: 45%; border-top: solid $primary; text-wrap: nowrap; }
    #ask { display: none; height: 1; text-style: reverse; }
    #footer { height: auto; dock: bottom; text-style: bold; }
    """
    AUTO_FOCUS = None  # nothing takes the keys: they move the cursor and the steps
    # Every binding is a priority one and the input line is read in on_event, so keys act in the order
    # they came even in a burst (`j12⏎n`): a non-priority key is sent on to whatever had the focus when it
    # arrived, before `j` opened the input line.
    BINDINGS = [
        Binding("n,space", "next", show=False, priority=True),
        Binding("enter", "enter", show=False, priority=True),
        Binding("b", "back", show=False, priority=True),
        Binding("left", "move(0, -1)", show=False, priority=True),
        Binding("right", "move(0, 1)", show=False, priority=True),
        Binding("up", "move(-1, 0)", show=False, priority=True),
        Binding("down", "move(1, 0)", show=False, priority=True),
        Binding("tab", "matrix(1)", show=False, priority=True),
        Binding("shift+tab", "matrix(-1)", show=False, priority=True),
        Binding("c", "ask('cell')", show=False, priority=True),
        Binding("j", "ask('step')", show=False, priority=True),
        Binding("l", "language", show=False, priority=True),
        Binding("question_mark", "help", show=False, priority=True),
        Binding("q", "leave(0)", show=False, priority=True),
        Binding("escape", "cancel", show=False, priority=True),
        Binding("ctrl+c", "leave(130)", show=False, priority=True),
    ]

    def __init__(self, walk, quiz: bool = False):
        super().__init__(ansi_color=True)  # the terminal's own colours and background, light or dark
        self.walk, self.quiz, self.p = walk, quiz, walk.precision
        self.k = 0
        self.seen: set[int] = set()
        self.asked: dict[int, bool | None] = {}  # step → right? (None: skipped)
        self.grids: list[MatrixGrid] = []
        self.current = 0  # index into grids
        self.asking = ""  # "cell", "step" or "quiz": what the input line is for
        self.typed = ""  # the input line's text
        self.panel_text = ""
        self.verdict: tuple[tuple, str] | None = None  # ((step, grid, cell), what the quiz said of it)

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield OptionList(id="steps")
            with Vertical(id="right"):
                yield Static(id="header")
                yield Body(id="body")
                yield Static(id="panel")
                yield Static(id="ask")
        yield Static(id="footer")

    def on_mount(self) -> None:
        self.theme = "ansi-light" if light_background() else "ansi-dark"  # both keep the terminal's background
        self.query_one("#steps").can_focus = False  # clicked, not tabbed into: keys stay with the cursor
        self.fill_steps()
        self.show(0)

    def on_resize(self, event) -> None:
        self.query_one("#steps").display = event.size.width >= NARROW
        self.call_after_refresh(self.rewrap)  # when the new size is known

    def rewrap(self) -> None:
        """The step drawn again, cursor kept: its why-texts and arithmetic wrapped to the new width."""
        if self.grids and not self.asking:
            self.show(self.k, keep_cursor=True)

    def right_width(self) -> int:
        """The width of the header, body and panel: the terminal's, less the step list when it shows."""
        return self.size.width - (31 if self.size.width >= NARROW else 0)

    def fill_steps(self) -> None:
        steps = self.query_one("#steps", OptionList)
        steps.clear_options()
        steps.add_options([f"{k + 1:>2} {s.title}" for k, s in enumerate(self.walk.screens)])

    # ---- a step -----------------------------------------------------------------------------------

    def show(self, k: int, keep_cursor: bool = False) -> None:
        """Draw step k: header, body, the cursor on the worked cell (or the quiz's cell)."""
        old = (self.current, self.grids[self.current].cursor) if keep_cursor and self.grids else None
        self.k, s, lang = k, self.walk.screens[k], self.walk.lang
        self.seen.add(k)
        self.query_one("#steps", OptionList).highlighted = k
        head = Text(f"{texts.ui('step', lang, k=k + 1, n=len(self.walk.screens))} · {s.stage}\n", style="bold")
        head.append(s.title, style="bold")
        for f in s.formulas:
            head.append("\n  " + f)
        self.query_one("#header", Static).update(head)
        body = self.query_one("#body", Body)
        body.remove_children()
        widgets = [
            Static(Text("\n".join(texts.wrap(w, self.right_width() - 2)))) for w in s.why
        ]  # a scrollbar  # breaks Chinese, too
        self.grids = []
        for section, names, role in (
            ("inputs", s.inputs, "input"),
            ("weights", s.weights, "weight"),
            ("", s.tensors, "tensor"),
        ):
            on_step = [m for name in names for m in matrices(self.walk, name, role)]
            if on_step and section:
                widgets.append(Static(Text(texts.ui(section, lang)), classes="section"))
            widgets += self.grid_widgets(on_step)
        widgets += self.grid_widgets([Matrix(v.title, v, 2, role="ready") for v in s.views])
        widgets += [Static(Text(line), classes="title") for line in s.lines]
        body.mount_all(widgets)
        body.scroll_home(animate=False)
        quiz = self.quiz and k not in self.asked and s.quiz is not None
        if old is not None and old[0] < len(self.grids):
            self.current, where = old
            self.place(where)
        elif quiz:
            self.start_quiz(s)
        else:
            self.current = next((n for n, g in enumerate(self.grids) if g.matrix.name == s.main), 0)
            self.place(self.grids[self.current].matrix.cell_of(s.example) if self.grids and s.example else None)
        self.update_footer()

    def grid_widgets(self, shown: list[Matrix]) -> list:
        out = []
        for m in shown:
            grid = MatrixGrid(m, self.p)
            self.grids.append(grid)
            out += [Static(Text(m.view.title), classes="title"), grid]
        return out

    # ---- the cursor -------------------------------------------------------------------------------

    def place(self, where) -> None:
        """Put the cursor on cell `where` of the current grid (its first shown cell when None)."""
        if not self.grids:
            self.say(Text("\n".join(self.walk.screens[self.k].lines)))
            return
        grid = self.grids[self.current]
        where = where if where in grid.matrix.cells else grid.matrix.cells[0]
        for g in self.grids:
            g.cursor = where if g is grid else None
        self.light(grid.matrix, grid.matrix.index(where))
        self.explain_cursor()
        self.call_after_refresh(self.scroll_to_cursor, grid, where)

    def scroll_to_cursor(self, grid: MatrixGrid, where: tuple[int, int]) -> None:
        """Scroll the body (down or sideways) so the cursor's cell is in view."""
        x, w = grid.x_of(where[1])
        row = grid.matrix.view.rows.index(where[0]) + 1
        box = grid.virtual_region
        self.query_one("#body", Body).scroll_to_region(Region(box.x + x, box.y + row, w, 1), animate=False)

    def light(self, matrix: Matrix, idx: tuple) -> None:
        """Light up the operand cells of the cursor's cell in every matrix on the step."""
        graph = self.walk.session.graph
        operands = graph.operands(matrix.name, idx) if matrix.role != "ready" else []
        for g in self.grids:
            g.lit = [index for name, index in operands if name == g.matrix.name]
            g.refresh()

    def explain_cursor(self) -> None:
        grid = self.grids[self.current]
        if grid.cursor == grid.hidden and self.asking == "quiz":
            return  # the quiz question stays in the panel
        text = arithmetic(self.walk, grid.matrix, grid.matrix.index(grid.cursor), self.right_width())
        if self.verdict and self.verdict[0] == (self.k, self.current, grid.cursor):  # above its cell's arithmetic,
            text = Text(self.verdict[1] + "\n") + text  # also when a resize redraws the step after the answer
        self.say(text)

    def say(self, text: Text) -> None:
        self.panel_text = text.plain
        self.query_one("#panel", Static).update(text)

    def on_matrix_grid_pointed(self, event: MatrixGrid.Pointed) -> None:
        if self.asking == "quiz":
            return
        self.current = self.grids.index(event.grid)
        self.place(event.cell)

    def action_move(self, rows: int, cols: int) -> None:
        if not self.grids or self.asking == "quiz":
            return
        grid = self.grids[self.current]
        shown_rows = [i for i in grid.matrix.view.rows if i is not None]
        shown_cols = [j for j in grid.matrix.view.cols if j is not None]
        i, j = grid.cursor
        r = min(max(shown_rows.index(i) + rows, 0), len(shown_rows) - 1)
        c = min(max(shown_cols.index(j) + cols, 0), len(shown_cols) - 1)
        self.place((shown_rows[r], shown_cols[c]))

    def action_matrix(self, step: int) -> None:
        if self.grids and self.asking != "quiz":
            self.current = (self.current + step) % len(self.grids)
            self.place(None)

    # ---- steps and keys ---------------------------------------------------------------------------

    def action_next(self) -> None:
        if self.k + 1 < len(self.walk.screens):
            self.show(self.k + 1)

    def action_enter(self) -> None:
        """Enter on a matrix of an earlier step goes to that step; elsewhere it is `next` (the end on the last)."""
        grid = self.grids[self.current] if self.grids else None
        made = made_by(self.walk, grid.matrix.name) if grid is not None and grid.matrix.role == "input" else None
        if made is not None:
            self.show(made)
        elif self.k + 1 < len(self.walk.screens):
            self.show(self.k + 1)
        else:
            self.exit(return_code=0)

    def action_back(self) -> None:
        if self.k > 0:
            self.show(self.k - 1)

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        if event.option_index != self.k:
            self.show(event.option_index)

    def action_language(self) -> None:
        lang = "zh" if self.walk.lang == "en" else "en"
        texts.use(lang)
        tell(self.walk, lang)
        self.fill_steps()
        self.show(self.k, keep_cursor=True)

    def action_help(self) -> None:
        self.say(Text(texts.t("tui.help", self.walk.lang).replace(" · ", "\n")))

    def action_leave(self, code: int) -> None:
        self.exit(return_code=code)

    def update_footer(self) -> None:
        lang = self.walk.lang
        line = texts.t("tui.keys", lang)
        answered = [ok for ok in self.asked.values() if ok is not None]
        if self.quiz:
            line += " · " + texts.t("tui.quiz_score", lang, right=sum(answered), asked=len(answered))
        self.query_one("#footer", Static).update(Text(line))

    # ---- the input line: a cell, a step, a quiz answer ----------------------------------------------

    def action_ask(self, what: str) -> None:
        lang, n = self.walk.lang, len(self.walk.screens)
        prompt = {
            "cell": lambda: texts.t("tui.cell_prompt", lang),
            "step": lambda: texts.t("tui.step_prompt", lang, n=n, stages=", ".join(self.stages())),
        }[what]()
        self.open_input(what, prompt)

    def open_input(self, what: str, prompt: str) -> None:
        self.asking, self.typed = what, ""
        self.say(Text(prompt))
        self.query_one("#ask", Static).display = True
        self.show_typed()

    def show_typed(self) -> None:
        self.query_one("#ask", Static).update(Text(f"> {self.typed}▏"))

    def close_input(self) -> None:
        self.asking = ""
        self.query_one("#ask", Static).display = False

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
            await super().on_event(event)

    def action_cancel(self) -> None:
        if self.asking == "quiz":
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
            self.say(Text(f"attncalc: {e}"))

    def goto_step(self, text: str) -> None:
        stages, n = [s.stage for s in self.walk.screens], len(self.walk.screens)
        if text.isdigit() and 1 <= int(text) <= n:
            self.show(int(text) - 1)
        elif text in stages:
            self.show(stages.index(text))
        else:
            raise InputError("j", texts.t("tui.no_step", self.walk.lang, n=n), repr(text))

    def goto_cell(self, text: str) -> None:
        """`爱,0` on the step's main tensor or `K:你,1`: the cursor goes there when it is on the step."""
        label, expansion = cell(self.walk, self.walk.screens[self.k], text)
        name = text.rpartition(":")[0].strip() or self.walk.screens[self.k].main
        graph = self.walk.session.graph
        node = graph.node(name)
        from attncalc.inputs.literal import parse_cell

        idx = parse_cell(text.rpartition(":")[2], node.rows, node.cols, graph.value(name).shape, option="c")
        for n, g in enumerate(self.grids):
            where = g.matrix.cell_of(idx) if g.matrix.name == name else None
            if where is not None:
                self.current = n
                self.place(where)
                return
        self.say(Text("\n".join(wrapped(label, expansion_lines(expansion, self.p), self.right_width()))))

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
        """The verdict on a typed answer (the rounding paths of the printed quiz and check: attncalc/tolerance.py),
        then the arithmetic."""
        from attncalc.render.check_view import either
        from attncalc.tolerance import judge

        grid, lang = self.grids[self.current], self.walk.lang
        graph, name = self.walk.session.graph, grid.matrix.name
        idx = grid.matrix.index(grid.hidden)
        value = float(graph.value(name)[idx])
        label = label_of(graph.node(name), idx)
        verdict = judge(text, value, graph, name, idx, self.p) if text else None
        if text and verdict is None:
            self.say(Text(texts.ui("quiz_nan", lang)))
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

    def summary(self) -> str:
        """The line printed after the app ends (the alternate screen leaves nothing behind)."""
        lang = self.walk.lang
        line = texts.t("tui.summary", lang, seen=len(self.seen), n=len(self.walk.screens))
        answered = [ok for ok in self.asked.values() if ok is not None]
        if answered:
            line += " " + texts.ui("score", lang, right=sum(answered), asked=len(answered))
        return line


def run(walk, quiz: bool) -> int:
    """The full-screen walk; prints the summary line after it and returns the exit code. It lives for as
    long as the learner likes, and Textual's widgets and messages form cycles: the cyclic collector,
    which the one-shot commands go without (cli.app.program), runs again."""
    import gc

    gc.enable()
    app = WalkApp(walk, quiz)
    app.run()
    print(app.summary())
    return app.return_code or 0
