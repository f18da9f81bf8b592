"""The full-screen walk: the screens of `attncalc.learn.walk`, one at a time, to explore with a cell cursor.

A step list (the current step marked ▶ and highlighted; hidden below 90 columns), a pinned header (step
and title), a scrolling body (the formulas, why, the tensors made here with the cursor, then the inputs
from earlier steps and the weights), a pinned panel with the arithmetic of the cell under the cursor (the
Expansion every renderer uses) and a footer with the keys of the state the walk is in. The input cells
of the highlighted cell (`Graph.operands`) are lit up in the matrices they come from. Every text is
wrapped by attncalc by display width (`prose.py`), so none loses a character next to a Chinese one.
"""

from __future__ import annotations

import os

from rich.cells import cell_len
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.geometry import Region
from textual.widgets import OptionList

from attncalc import texts
from attncalc.learn.walk import graph_of, made_by, tell
from attncalc.tui.asking import Asking
from attncalc.tui.grid import Matrix, MatrixGrid
from attncalc.tui.layout import opening_top, sections
from attncalc.tui.panel import arithmetic, light_background
from attncalc.tui.prose import Prose, words

NARROW = 90  # below this width the step list is hidden
MARK = "▶"  # the current step in the step list: it shows without colour too


class Body(VerticalScroll, can_focus=False):
    """The scrolling part; keys move the cell cursor, so it never takes the focus."""


class WalkApp(Asking, App):
    CSS = """
    Screen { layout: vertical; }
    #main { height: 1fr; }
    #steps { width: 30; height: 100%; max-height: 100%; border: none; border-right: solid $primary;
             text-wrap: nowrap; text-overflow: ellipsis; }
    #steps > .option-list--option-highlighted { background: $primary; color: ansi_bright_white; text-style: bold underline; }
    #right { width: 1fr; }
    #header { border-bottom: solid $primary; }
    #body { height: 1fr; overflow-x: hidden; }
    .section { text-style: italic; margin-top: 1; }
    .para, .note { margin-top: 1; }
    .title { text-style: bold; margin-top: 1; }
    .title.first { margin-top: 0; }
    #panel { height: auto; max-height: 45%; border-top: solid $primary; overflow-x: hidden; }
    #panel.helping { max-height: 100%; }
    #ask { display: none; text-style: reverse; }
    #footer { dock: bottom; text-style: bold; }
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
        Binding("pageup", "scroll('page_up')", show=False, priority=True),
        Binding("pagedown", "scroll('page_down')", show=False, priority=True),
        Binding("home", "scroll('home')", show=False, priority=True),
        Binding("end", "scroll('end')", show=False, priority=True),
        Binding("left_square_bracket", "scroll_panel(-1)", show=False, priority=True),
        Binding("right_square_bracket", "scroll_panel(1)", show=False, priority=True),
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
        self.helping = False  # the panel shows the keys (`?`)
        self.typed = ""  # the input line's text
        self.verdict: tuple[tuple, str] | None = None  # ((step, grid, cell), what the quiz said of it)
        self.mounted = None  # the step's widgets being mounted (an AwaitMount)
        self.opening = False  # show() is placing the cursor of a step just entered
        self.user_scrolled = False
        self.failed = False  # the panel shows an error (`j 99`): the next key puts the arithmetic back

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield OptionList(id="steps")
            with Vertical(id="right"):
                yield Prose(id="header")
                yield Body(id="body")
                with VerticalScroll(id="panel", can_focus=False):
                    yield Prose(id="arithmetic")
                yield Prose(id="ask")
        yield Prose(id="footer")

    def on_mount(self) -> None:
        self.theme = "ansi-light" if light_background() else "ansi-dark"  # both keep the terminal's background
        self.query_one("#steps").can_focus = False  # clicked, not tabbed into: keys stay with the cursor
        self.fill_steps()
        self.show(0)

    def on_resize(self, event) -> None:
        self.query_one("#steps").display = event.size.width >= NARROW
        self.call_after_refresh(self.rewrap)  # when the new size is known

    def rewrap(self) -> None:
        """After a resize: the texts rewrap by themselves; the cursor's column is kept in its grid's view
        and the footer's keys fit the new width."""
        grid = self.grids[self.current] if self.grids else None
        if grid is not None and grid.cursor is not None:
            grid.follow(grid.cursor[1])
        self.update_footer()

    @property
    def panel_text(self) -> str:
        """What the panel says, as the terminal shows it."""
        return self.query_one("#arithmetic", Prose).plain

    def fill_steps(self) -> None:
        steps = self.query_one("#steps", OptionList)
        steps.clear_options()
        steps.add_options([self.step_line(k) for k in range(len(self.walk.screens))])

    def step_line(self, k: int) -> str:
        return f"{MARK if k == self.k else ' '}{k + 1:>2} {self.walk.screens[k].title}"

    def mark_step(self, old: int, new: int) -> None:
        steps = self.query_one("#steps", OptionList)
        if steps.option_count == len(self.walk.screens):
            for k in {old, new}:
                steps.replace_option_prompt_at_index(k, self.step_line(k))
        steps.highlighted = new

    # ---- a step -----------------------------------------------------------------------------------

    def show(self, k: int, keep_cursor: bool = False) -> None:
        """Draw step k: its title, formulas and why first, then the worked tensor with the cursor on the worked
        cell (or the quiz's cell), the matrices that cell is made from, the rest (tui/layout.py)."""
        old = (self.current, self.grids[self.current].cursor) if keep_cursor and self.grids else None
        before, self.k, s, lang = self.k, k, self.walk.screens[k], self.walk.lang
        self.seen.add(k)
        self.mark_step(before, k)
        step = f"{texts.ui('step', lang, k=k + 1, n=len(self.walk.screens))} · {s.stage}"
        self.query_one("#header", Prose).set(words(step, "bold"), words(s.title, "bold"))
        body = self.query_one("#body", Body)
        body.remove_children()
        widgets = [Prose(*(words(f, indent=2) for f in s.formulas))] if s.formulas else []
        widgets += [Prose(w, classes="para") for w in s.why]
        self.grids = []
        for section, shown in sections(self.walk, s):  # the worked tensor, then what its cell is made from
            if section:
                widgets.append(Prose(texts.ui(section, lang), classes="section"))
            widgets += self.grid_widgets(shown, under_section=bool(section))
        widgets += [Prose(words(line, "bold"), classes="title") for line in s.lines]
        if k + 1 == len(self.walk.screens):  # how the walk ends (an encoder-only model, a fixture's last stage)
            widgets += [Prose(note, classes="note") for note in self.walk.notes]
        self.mounted = body.mount_all(widgets)
        body.scroll_home(animate=False)
        quiz = self.quiz and k not in self.asked and s.quiz is not None
        self.opening = True  # the body opens on the cursor, the explanation and the lit cells (opening_top)
        self.user_scrolled = False  # a PgDn before the opening scroll has run wins over it
        if old is not None and old[0] < len(self.grids):
            self.current, where = old
            self.place(where)
        elif quiz:
            self.start_quiz(s)
        else:
            self.current = next((n for n, g in enumerate(self.grids) if g.matrix.name == s.main), 0)
            self.place(self.grids[self.current].matrix.cell_of(s.example) if self.grids and s.example else None)
        self.opening = False
        self.update_footer()

    def grid_widgets(self, shown: list[Matrix], under_section: bool = False) -> list:
        """A title and a grid per matrix; a section's first title right under the section's name, a vector's
        right under the vector before it (γ and β, a list of parameters)."""
        out = []
        for k, m in enumerate(shown):
            grid = MatrixGrid(m, self.p)
            self.grids.append(grid)
            tight = under_section and (not k or m.ndim == shown[k - 1].ndim == 1)
            out += [Prose(m.view.title, classes="title first" if tight else "title"), grid]
        return out

    # ---- the cursor -------------------------------------------------------------------------------

    def place(self, where) -> None:
        """Put the cursor on cell `where` of the current grid (its first shown cell when None)."""
        if not self.grids:
            self.say(*self.walk.screens[self.k].lines)
            return
        grid = self.grids[self.current]
        where = where if where in grid.matrix.cells else grid.matrix.cells[0]
        for g in self.grids:
            g.cursor = where if g is grid else None
        self.light(grid.matrix, grid.matrix.index(where))
        self.explain_cursor()
        self.call_later(self.scroll_when_laid_out, grid, where, not self.opening)

    async def scroll_when_laid_out(self, grid: MatrixGrid, where: tuple[int, int], down: bool) -> None:
        """The step's widgets mounted, then laid out at the width they wrap to: only then are the grid's
        place and the body's height known."""
        await self.mounted
        self.call_after_refresh(self.scroll_to_cursor, grid, where, down)

    def scroll_to_cursor(self, grid: MatrixGrid, where: tuple[int, int], down: bool = True) -> None:
        """The grid shows the cursor's column (it scrolls sideways itself, its row labels stay) and the body
        scrolls as little as it can to show the cursor's row; on a step just entered, the cursor's row, then
        the start of its explanation, then the lit cells the cursor's cell is made from (layout.opening_top)."""
        grid.follow(where[1])
        body = self.query_one("#body", Body)
        if not down and self.user_scrolled:  # the step opened, then a key scrolled it: that stays
            return
        row = grid.virtual_region.y + grid.matrix.view.rows.index(where[0]) + 1
        if down:
            body.scroll_to_region(Region(0, row, 1, 1), animate=False)
            return
        why = [w.virtual_region.y for w in body.query(".para")][:1]  # a step just entered: its explanation
        lit = [g.virtual_region.y + g.matrix.view.rows.index(c[0]) + 1 for g in self.grids for c in g.lit_cells()]
        height = body.scrollable_content_region.height
        body.scroll_to(y=opening_top(row, lit, why[0] if why else None, height), animate=False)

    def light(self, matrix: Matrix, idx: tuple) -> None:
        """Light up the operand cells of the cursor's cell in every matrix on the step."""
        graph = graph_of(self.walk, self.walk.screens[self.k])
        operands = graph.operands(matrix.name, idx) if matrix.role != "ready" else []
        for g in self.grids:
            g.lit = [index for name, index in operands if name == g.matrix.name]
            g.refresh()

    def explain_cursor(self) -> None:
        grid = self.grids[self.current]
        if grid.cursor == grid.hidden and self.asking == "quiz":
            return  # the quiz question stays in the panel
        parts = arithmetic(self.walk, self.walk.screens[self.k], grid.matrix, grid.matrix.index(grid.cursor))
        if self.verdict and self.verdict[0] == (self.k, self.current, grid.cursor):  # above its cell's arithmetic,
            parts.insert(0, words(self.verdict[1]))  # also when a resize redraws the step after the answer
        self.say(*parts)

    def say(self, *parts, helping: bool = False) -> None:
        """Put `parts` (texts or prose parts) in the panel, at its top."""
        if self.helping != helping:
            self.helping = helping
            self.query_one("#panel").set_class(helping, "helping")  # the whole help, not its first lines
            self.call_later(self.update_footer)
        self.failed = False
        self.query_one("#arithmetic", Prose).set(*parts)
        self.query_one("#panel").scroll_home(animate=False)

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

    def action_scroll(self, where: str) -> None:
        """PgUp/PgDn/Home/End: the body scrolls; the cursor stays where it is."""
        body = self.query_one("#body", Body)
        self.user_scrolled = True
        getattr(body, f"scroll_{where}")(animate=False)

    def action_scroll_panel(self, direction: int) -> None:
        panel = self.query_one("#panel")
        panel.scroll_relative(y=direction * max(1, panel.size.height - 1), animate=False)

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
        """`?` shows the keys in the panel, one to a line, wrapped between words; `?` again or Esc closes it."""
        if self.helping:
            self.close_help()
            return
        self.say(*texts.t("tui.help", self.walk.lang).split(" · "), helping=True)

    def close_help(self) -> None:
        """The panel back to what the cursor is on (after the help or an error)."""
        if self.grids:
            self.explain_cursor()
        else:
            self.say(*self.walk.screens[self.k].lines)

    def action_leave(self, code: int) -> None:
        self.exit(return_code=code)

    def update_footer(self) -> None:
        """The keys of the state the walk is in: the input line's while it is open, the help's, else the
        walk's (a shorter list when the whole one does not fit on a line); the quiz score."""
        lang, width = self.walk.lang, self.size.width
        if self.asking:
            line = texts.t("tui.keys_quiz" if self.asking == "quiz" else "tui.keys_input", lang)
        elif self.helping:
            line = texts.t("tui.keys_help", lang)
        else:
            line = texts.t("tui.keys", lang)
            line = line if cell_len(line) <= width else texts.t("tui.keys_short", lang)
        answered = [ok for ok in self.asked.values() if ok is not None]
        if self.quiz:
            line += " · " + texts.t("tui.quiz_score", lang, right=sum(answered), asked=len(answered))
        self.query_one("#footer", Prose).set(line)

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
    which the one-shot commands go without (cli.app.program), runs again. An exported COLUMNS or LINES
    (stale after a resize, or 0) would override the terminal's real size, which Textual reads through
    shutil and follows on every resize: on a terminal the walk takes the terminal's own size."""
    import gc

    gc.enable()
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)
    app = WalkApp(walk, quiz)
    app.run()
    print(app.summary())
    return app.return_code or 0
