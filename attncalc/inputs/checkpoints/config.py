"""A checkpoint's hyperparameters, each checked where a name map reads it and named as the file names it:
`…/config.json: num_hidden_layers` for a folder, `….gguf: llama.block_count` for a GGUF file."""

from __future__ import annotations

from attncalc.errors import InputError, describe

REQUIRED = object()


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class Fields:
    """`whole`, `number`, `mapping` of a config dict; a bad or missing value raises InputError naming it."""

    def __init__(self, config: dict, source: str, gguf_arch: str | None = None):
        self.config, self.source, self.gguf_arch = config, source, gguf_arch

    def where(self, key: str) -> str:
        if self.gguf_arch:
            from attncalc.inputs.model_config import GGUF_KEYS

            renamed = {name: gguf_key for gguf_key, name in GGUF_KEYS.items()}
            if key in renamed:
                return f"{self.source}: {self.gguf_arch}.{renamed[key]}"
        return f"{self.source}: {key}"

    def get(self, key: str, default=None):
        value = self.config.get(key)
        return default if value is None else value

    def whole(self, key: str, minimum: int = 1, default=REQUIRED) -> int:
        value = self.config.get(key)
        if value is None:
            if default is REQUIRED:
                raise InputError(self.where(key), f"a whole number ≥ {minimum}", "no such key")
            return default
        if not _whole(value) or value < minimum:
            raise InputError(self.where(key), f"a whole number ≥ {minimum}", describe(value))
        return value

    def number(self, key: str, default: float, positive: bool = True) -> float:
        value = self.config.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (positive and not value > 0):
            raise InputError(self.where(key), "a number > 0" if positive else "a number", describe(value))
        return float(value)

    def mapping(self, key: str) -> dict:
        value = self.config.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise InputError(
                self.where(key), 'an object such as {"rope_type": "linear", "factor": 2.0}', describe(value)
            )
        return dict(value)

    def choice(self, key: str, default: str, allowed: tuple, why: str = "") -> str:
        value = self.get(key, default)
        if value not in allowed:
            raise InputError(self.where(key), " or ".join(allowed) + why, describe(value))
        return value

    def layers(self, names, last_layer_tensor: str, key: str = "num_hidden_layers") -> int:
        """The layer count `key`, checked against the weights: its last layer's `last_layer_tensor` is stored."""
        count = self.whole(key)
        name = last_layer_tensor.format(i=count - 1)
        if name not in names:
            raise InputError(self.where(key), "no more layers than the weights hold", f"{count} (no {name})")
        if last_layer_tensor.format(i=count) in names:  # transformers would leave the rest unused, with a warning
            held = next(i for i in range(count, len(names) + 1) if last_layer_tensor.format(i=i) not in names)
            raise InputError(self.where(key), f"the {held} layers the weights hold", f"{count}")
        return count

    def agrees(self, key: str, value: int, why: str) -> None:
        """A hyperparameter the weights also give (a head's width, the FFN's): when the config states it, the
        same number, never the config's silently (a wrong scale) nor the weights' silently."""
        stated = self.config.get(key)
        if stated is not None and stated != value:
            raise InputError(self.where(key), f"{value} ({why})", describe(stated))

    def agreeing(self, key: str, lazy, axis: int, why: str):
        """`lazy` (a weight), once `key` agrees with its size along `axis`."""
        self.agrees(key, lazy.shape[axis] if lazy.shape else 0, f"{why}, {lazy.name}")
        return lazy
