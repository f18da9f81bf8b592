"""Generation one token at a time (docs/commands.md, docs/document.md): sampling warpers, a cached decoding step, the loop.

Each step builds a small graph for the new row only (`decoder_graph` with the Builder's position
`offset` and its `extend_kv` hook): embedding and position at offset t, per layer Q of the new
row, K and V rows appended to the cache, scores over every cached key, softmax, A·V, Wo,
Add & Norm, FFN, then logits. Without the cache the same builder runs on every token so far and
the last rows are taken; both give the same numbers.

References: Hugging Face transformers `generation/logits_process.py` (TemperatureLogitsWarper,
TopKLogitsWarper, TopPLogitsWarper: the order of the warpers and what each keeps), and
`generation/utils.py` (`_sample`: greedy is argmax, sampling draws from the warped softmax).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from attncalc.core.build import Builder, Options
from attncalc.core.build_graph import build
from attncalc.core.build_layers import decoder, output
from attncalc.core.expansion import Expansion, Note, given
from attncalc.core.fixture import Fixture
from attncalc.core.graph import Graph, Node
from attncalc.core.ops import Affine, Attend, Identity, Op, Scores, Softmax
from attncalc.errors import InputError
from attncalc.render.notebook import generation_bundle

# ---- sampling: pure functions on one vector of the vocabulary [V] ---------------------------


def softmax(z: np.ndarray) -> np.ndarray:
    """[V] -> [V]; −∞ entries get probability 0 (the one softmax of the graph's ops)."""
    return Softmax().compute(np.asarray(z, dtype=float))


def rank(p: np.ndarray) -> np.ndarray:
    """Token ids from the most to the least likely; ties keep the lower id first."""
    return np.argsort(-p, kind="stable")


def top_k_keep(logits: np.ndarray, k: int) -> np.ndarray:
    """[V] bool: logits ≥ the k-th largest (ties with it stay, as HF's TopK); k = 0 keeps every token."""
    if k <= 0 or k >= logits.size:
        return np.ones(logits.size, bool)
    return logits >= np.sort(logits)[-k]


def top_p_keep(p: np.ndarray, top_p: float) -> np.ndarray:
    """[V] bool: the smallest set of most likely tokens whose probability reaches top_p (always the first).

    Tokens are taken from the most likely down (ties: lower id first) while the sum before them is
    still short of top_p; a sum within 1e-12 of top_p counts as reaching it. top_p = 1 keeps every
    token with probability > 0, as HF's TopP does.
    """
    order = rank(p)  # [V]
    if top_p >= 1.0:
        keep_sorted = p[order] > 0
    else:
        before = np.cumsum(p[order]) - p[order]  # [V]: probability of the tokens ranked above
        keep_sorted = (before < top_p - 1e-12) & (p[order] > 0)
    keep_sorted[0] = True
    keep = np.zeros(p.size, bool)
    keep[order] = keep_sorted
    return keep


@dataclass
class Settings:
    """How the next token is chosen (the command line's options)."""

    max_new_tokens: int = 10
    strategy: str = "greedy"
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None
    use_cache: bool = True

    def check(self) -> Settings:
        """Each setting by its option's rule (attncalc/arguments.py, which the Python API's keywords use too)."""
        from attncalc import arguments

        for name, value in (
            ("max_new_tokens", self.max_new_tokens),
            ("strategy", self.strategy),
            ("temperature", self.temperature),
            ("top_k", self.top_k),
            ("top_p", self.top_p),
            ("seed", self.seed),
            ("kv_cache", self.use_cache),
        ):
            arguments.check(name, value, cli=True)
        return self


@dataclass
class Choice:
    """How one token was chosen: greedy argmax, or a draw u from the warped distribution."""

    token: int
    scaled: np.ndarray  # [V] logits / temperature
    kept_k: np.ndarray  # [V] bool, after top-k
    kept_p: np.ndarray  # [V] bool, after top-p (the tokens that could be drawn)
    p_sample: np.ndarray  # [V] the distribution the draw uses (0 outside kept_p)
    u: float | None = None  # the uniform draw in [0, 1); None for greedy

    def p_temperature(self) -> np.ndarray:
        """[V] softmax(logits / T): the probabilities at the temperature, before top-k and top-p."""
        return softmax(self.scaled)

    def p_top_k(self) -> np.ndarray:
        """[V] the probabilities over what top-k keeps: the vector top-p walks down."""
        return softmax(np.where(self.kept_k, self.scaled, -np.inf))


def _divided(logits: np.ndarray, temperature: float) -> np.ndarray:
    """logits / T, refused (not ±∞ and NaN further on) when a T so small makes a logit overflow float64."""
    with np.errstate(over="raise"):
        try:
            return logits / temperature
        except FloatingPointError:
            big = float(np.abs(logits).max())
            raise InputError(
                "--temperature",
                f"a temperature at which every logit / T fits in float64 (here at least {big / np.finfo(float).max:.3g})",
                repr(temperature),
            ) from None


def choose(logits: np.ndarray, s: Settings, rng) -> Choice:
    """Greedy: argmax. Sample: temperature, then top-k, then top-p, then u ~ U[0, 1) walked down the
    ranked cumulative probabilities (the sorted table shows where u lands)."""
    scaled = _divided(logits, s.temperature)  # [V]
    if s.strategy == "greedy":
        all_ = np.ones(logits.size, bool)
        return Choice(int(np.argmax(logits)), scaled, all_, all_, softmax(logits))
    kept_k = top_k_keep(scaled, s.top_k)
    kept_p = top_p_keep(softmax(np.where(kept_k, scaled, -np.inf)), s.top_p) & kept_k  # Choice.p_top_k
    p_sample = softmax(np.where(kept_p, scaled, -np.inf))  # [V]
    order = rank(p_sample)[: int(kept_p.sum())]  # the kept tokens, most likely first
    u = float(rng.random())
    at = min(int(np.searchsorted(np.cumsum(p_sample[order]), u, side="right")), order.size - 1)
    return Choice(int(order[at]), scaled, kept_k, kept_p, p_sample, u)


# ---- the model: weights read once, the encoder run once --------------------------------------


class ReadOnce(Fixture):
    """A fixture whose arrays are read and checked once: every step builds a graph from the same weights."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self._arrays: dict = {}
        self._vocab: list[str] | None = None

    def array(self, path, shape, required=True, why=""):
        key = (path, tuple(shape), required)
        if key not in self._arrays:
            self._arrays[key] = super().array(path, shape, required, why)
        return self._arrays[key]

    def vocab(self) -> list[str]:  # checked once: 49,152 labels cost ~6 ms a check, twice a step
        if self._vocab is None:
            self._vocab = super().vocab()
        return self._vocab


class Model:
    """What every step needs: fixture, options, the prompt, eos, and (encoder–decoder) the encoder's output."""

    def __init__(
        self, raw: dict, source: str = "", prefix: str = "", opts: Options | None = None, given: dict | None = None
    ):
        fx = self.fx = ReadOnce(raw, source, True, prefix)
        self.opts = opts or Options()
        self.vocab = fx.vocab()
        if not fx.has("decoder"):
            raise InputError(
                fx.where("decoder"), "the decoder's layers (generate needs a decoder)", "nothing (the key is missing)"
            )
        self.decoder_only = not fx.has("encoder")
        bos, eos = fx.special("bos"), fx.special("eos")
        self.eos = eos if eos in self.vocab else None
        source = fx.tokens("source", required=not self.decoder_only, nonempty=not self.decoder_only)
        if self.decoder_only:
            self.prompt = source or ([bos] if bos in self.vocab else [])
            self.enc_labels = self.enc_pad = self.enc_out = self.encoder = None
            if not self.prompt:
                raise InputError(fx.where("source"), "a prompt (or a special.bos to start from)", "nothing")
            return
        if bos not in self.vocab:
            raise InputError(fx.where("special.bos"), "a token of the vocab (decoding starts from it)", repr(bos))
        self.prompt = [bos]
        self.enc_labels, pad = source, fx.special("pad")
        self.enc_pad = [t == pad for t in source]
        self.encoder = build(fx, "encoder", self.opts)  # encoded once; a document's tensors are used as given
        for name, value in (given or {}).items():
            if name in self.encoder.nodes and self.encoder.nodes[name].shown:
                self.encoder.give(name, value)
        self.enc_out = self.encoder.value("enc_out")


# ---- one decoding step as a graph --------------------------------------------------------------


class Append(Op):
    """The KV cache after this step: the rows of earlier steps, then the new rows."""

    def compute(self, past, new):  # [m0, w], [n, w] -> [m0 + n, w]
        return np.concatenate([past, new], axis=0)

    def explain(self, xs, idx, g):
        i, j = idx
        m0 = xs[0].shape[0]
        if i < m0:
            v = float(xs[0][i, j])
            return Expansion([[given(v, g[0])]], v, Note("note.cached_row", i=i))
        v = float(xs[1][i - m0, j])
        return Expansion([[given(v, g[1])]], v, Note("note.appended"))

    def operands(self, shapes, idx):
        i, j = idx
        m0 = shapes[0][0]
        return [(0, (i, j))] if i < m0 else [(1, (i - m0, j))]


CACHE_FORMULA = {"K_all": Note("formula.K_all"), "V_all": Note("formula.V_all")}


def _extender(g: Graph, past: dict):
    """Builder.extend_kv for a cached step: K_all = [K_past; K], V_all = [V_past; V] for each self-attention."""

    def extend(prefix, k, v, labels):
        k_past, v_past, past_labels = past.get(prefix, (None, None, []))
        for name, new, old in (("K_all", k, k_past), ("V_all", v, v_past)):
            cols = g.nodes[new].cols
            if old is None:
                g.add(
                    Node(
                        prefix + name,
                        op=Identity(Note("note.cache_start")),
                        inputs=(new,),
                        stage="decoder",
                        formula=CACHE_FORMULA[name],
                        rows=list(labels),
                        cols=cols,
                        about="kv_cache",
                    )
                )
            else:
                g.leaf(prefix + name[0] + "_past", old, rows=list(past_labels), cols=cols)
                g.add(
                    Node(
                        prefix + name,
                        op=Append(),
                        inputs=(prefix + name[0] + "_past", new),
                        stage="decoder",
                        formula=CACHE_FORMULA[name],
                        rows=list(past_labels) + list(labels),
                        cols=cols,
                        about="kv_cache",
                    )
                )
        return prefix + "K_all", prefix + "V_all", list(past_labels) + list(labels)

    return extend


def decoder_graph(model: Model, tokens: list[str], offset: int = 0, past: dict | None = None) -> Graph:
    """dec.X, D, every decoder layer, logits and probs for `tokens` at positions offset…; with `past`
    (prefix -> cached K, V, labels) each self-attention attends to the cached rows too."""
    tokens = list(tokens)  # the nodes keep it as their labels
    b = Builder(model.fx, model.opts)
    b.offset = offset
    if past is not None:
        b.extend_kv = _extender(b.g, past)
    x = b.embed(tokens, "dec.", "decoder")
    d_in = b.add_positions(x, tokens, "dec.", "decoder", out="D")
    enc = None
    if model.enc_out is not None:
        enc = b.g.leaf("enc_out", model.enc_out, rows=list(model.enc_labels))
    dec_out = decoder(b, d_in, tokens, enc, model.enc_labels, model.enc_pad)
    output(b, dec_out, tokens, [], [])
    return b.g


def _is_cross_kv(name: str) -> bool:
    return name.startswith("dec.") and (name.endswith(".cross.K") or name.endswith(".cross.V"))


def count_macs(g: Graph) -> tuple[int, int]:
    """(multiply-adds of every matrix product this graph computed, those of cross-attention K and V)."""
    total = cross = 0
    for name, node in g.nodes.items():
        if node.op is None or name in g.given or name not in g.cache:
            continue
        ins = [g.cache[i] for i in node.inputs]
        if isinstance(node.op, Affine):
            macs = ins[0].shape[0] * ins[1].shape[0] * ins[1].shape[1]  # rows × in × out
        elif isinstance(node.op, Scores):
            macs = g.cache[name].size * (ins[0].shape[1] // node.op.h)  # h·n·m cells × d_k
        elif isinstance(node.op, Attend):
            macs = g.cache[name].size * ins[0].shape[-1]  # n·h·d_v cells × m keys
        else:
            continue
        total += macs
        cross += macs if _is_cross_kv(name) else 0
    return total, cross


# ---- what a step shows ---------------------------------------------------------------------------

ALIASES = {"Q": "q", "Q_rope": "q_rope", "K": "k_new", "K_rope": "k_new_rope", "V": "v_new", "K_all": "K", "V_all": "V"}


def public_name(name: str) -> str:
    """`dec.0.self.K` (the new rows) -> `dec.0.self.k_new`, `dec.0.self.K_all` -> `dec.0.self.K`."""
    head, _, last = name.rpartition(".")
    return f"{head}.{ALIASES[last]}" if head.endswith(".self") and last in ALIASES else name


GRAPH_NAMES = {public: name for name, public in ALIASES.items()}


def graph_name(public: str) -> str:
    """The inverse of public_name: `dec.0.self.K` (the cache) -> `dec.0.self.K_all`, the node of a step's graph."""
    head, _, last = public.rpartition(".")
    return f"{head}.{GRAPH_NAMES[last]}" if head.endswith(".self") and last in GRAPH_NAMES else public


@dataclass
class Tensor:
    """One tensor of a step with its labels (a node's view, without the graph)."""

    value: np.ndarray
    rows: list | None
    cols: list | None
    formula: str


def _export_cached(g: Graph) -> dict[str, Tensor]:
    return {
        public_name(n): Tensor(g.value(n), node.rows, node.cols, str(node.formula))
        for n, node in g.nodes.items()
        if node.shown and n not in g.given
    }


def _export_full(g: Graph, n: int, first: bool) -> dict[str, Tensor]:
    """The same tensors from a graph over every token so far: the last n rows, the caches whole."""
    out = {}
    for name, node in g.nodes.items():
        if not node.shown or _is_cross_kv(name) and not first:
            continue
        if name.endswith("self.S"):
            p = name[:-1]
            for cache, src in (("K_all", p + ("K_rope" if p + "K_rope" in g.nodes else "K")), ("V_all", p + "V")):
                out[public_name(p + cache)] = Tensor(
                    g.value(src), g.nodes[src].rows, g.nodes[src].cols, str(CACHE_FORMULA[cache])
                )
        v = g.value(name)  # [total, w] or [h, total, m]: the step's rows are the last n
        whole = _is_cross_kv(name)
        out[public_name(name)] = Tensor(
            v if whole else v[..., -n:, :],
            node.rows if whole or not node.rows else node.rows[-n:],
            node.cols,
            str(node.formula),
        )
    return out


MAX_NEW_TOKENS = 4096  # per run, for a model whose fixture does not say its context (max_positions)


def token_limit(model: Model) -> tuple[int, str]:
    """How many new tokens fit: the model's context (max_positions, or a learned position table's rows)
    less the prompt, whose last token the first new one follows; else MAX_NEW_TOKENS."""
    fx = model.fx
    context, why = (fx.integer("max_positions") if fx.has("max_positions") else None), "max_positions"
    if context is None and fx.get("position.type") == "learned":
        context, why = len(fx.get("position.table") or []), "position.table rows"
    if context is None:
        return MAX_NEW_TOKENS, "attncalc's limit for a fixture without max_positions"
    if len(model.prompt) > context:  # not "at most 0 new tokens": the prompt itself does not fit
        raise InputError(
            "prompt",
            f"at most {context} tokens, the model's context ({why})",
            f"{len(model.prompt)} tokens: the prompt is longer than the context",
        )
    return max(context - len(model.prompt) + 1, 0), f"a context of {context} positions ({why}), less the prompt"


@dataclass
class Step:
    """One decoding step: what went in, what came out, what it cost."""

    index: int
    inputs: list[str]  # tokens fed (the whole prompt at step 0 of a decoder-only model)
    position: int  # position of the first of them
    cache_rows: int  # rows each self-attention cache holds after this step
    logits: np.ndarray  # [V] of the last row
    probs: np.ndarray  # [V] softmax(logits)
    choice: Choice
    token: str
    macs: dict  # {"with_cache": …, "without_cache": …}
    seconds: float
    tensors: dict = field(default_factory=dict)  # public name -> Tensor (when kept)
    graph: Graph | None = None  # the step's graph, to write out its cells (when kept: the walk)


@dataclass
class Generation:
    generated: list[str]
    steps: list[Step]
    settings: Settings
    prompt: list[str]

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:  # a notebook: a row per step
        return generation_bundle(self)

    def _repr_html_(self) -> str:
        return self._repr_mimebundle_()["text/html"]


def generate(
    model: Model, s: Settings, keep: bool = True, stop_at_eos: bool = True, on_step=None, keep_graphs: bool = False
) -> Generation:
    """Decode from the prompt until eos or s.max_new_tokens new tokens (stop_at_eos=False: always N);
    `on_step(done)` after each step (progress); `keep_graphs`: each step keeps its graph (the walk explains
    its cells)."""
    s.check()
    limit, why = token_limit(model)
    if s.max_new_tokens > limit:
        raise InputError("--max-new-tokens", f"at most {limit} ({why})", str(s.max_new_tokens))
    rng = np.random.default_rng(s.seed)
    fed, new = list(model.prompt), list(model.prompt)  # every token the decoder has seen; this step's
    past: dict = {}
    cross: dict = {}  # cross-attention K and V over the source, computed at step 0
    cross_macs = 0
    steps, generated = [], []
    for i in range(s.max_new_tokens):
        start = time.perf_counter()
        n, total = len(new), len(fed)
        if s.use_cache:
            g = decoder_graph(model, new, total - n, past)
            for name, value in cross.items():
                g.give(name, value)
        else:
            g = decoder_graph(model, fed, 0)
        logits = g.value("logits")[-1]  # [n, V] -> [V]: the last row predicts the next token
        choice = choose(logits, s, rng)
        seconds = time.perf_counter() - start
        measured, x = count_macs(g)
        if s.use_cache:
            for name in g.nodes:
                if name.endswith("K_all"):
                    p = name[:-5]
                    past[p] = (
                        g.value(p + "K_all"),
                        g.value(p + "V_all"),  # [total, kv·d_k], [total, kv·d_v]
                        g.nodes[p + "K_all"].rows,
                    )
            if i == 0:
                cross = {name: g.value(name) for name in g.nodes if _is_cross_kv(name)}
                cross_macs = x
            # every product but the cross K/V is per query row: without the cache all `total` rows are
            macs = {"with_cache": measured, "without_cache": (measured - x) * total // n + cross_macs}
        else:
            macs = {"with_cache": (measured - x) * n // total + (x if i == 0 else 0), "without_cache": measured}
        tensors = {}
        if keep:
            tensors = _export_cached(g) if s.use_cache else _export_full(g, n, i == 0)
        token = model.vocab[choice.token]
        step = Step(i, list(new), total - n, total, logits, g.value("probs")[-1], choice, token, macs, seconds, tensors)
        step.graph = g if keep_graphs else None
        steps.append(step)
        generated.append(token)
        if on_step is not None:
            on_step(i + 1)
        if stop_at_eos and token == model.eos:
            break
        fed.append(token)
        new = [token]
    return Generation(generated, steps, s, list(model.prompt))
