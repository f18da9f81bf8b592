"""The one exception that bad input raises; the CLI turns it into exit 2 and a short message."""

# How to get the `models` extra (safetensors, tokenizers, gguf) that an error asks for: attncalc is not on
# the package index, so from its clone (pyproject.toml's optional-dependencies).
MODELS_EXTRA = "pip install '.[models]' in attncalc's clone"


class InputError(ValueError):
    """Bad input: names where (a file, a JSON path, an option), what was expected, what was found."""

    def __init__(self, where: str, expected: str, found: str | None = None):
        self.where, self.expected, self.found = where, expected, found
        msg = f"{where}: expected {expected}" + (f", found {found}" if found is not None else "")
        super().__init__(msg)


def describe(value) -> str:
    """A short, readable description of a bad value for error messages."""
    return shortened(repr(value))


def shortened(text: str, most: int = 40) -> str:
    """Text as written, cut to `most` characters (a 5,000-digit number is not echoed whole)."""
    return text if len(text) <= most else text[: most - 3] + "..."
