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


class Unwritten(OSError):
    """A file named for the output could not be written to the end (a full disk, a quota, an I/O error): exit 74
    as for standard output (docs/exit-codes.md), not 2: nothing is wrong with what the person asked."""


def not_written(e: OSError, path, where: str, expected: str) -> Exception:
    """What a failed write of `path` raises: Unwritten when the disk failed it, else InputError naming the
    option or keyword (`where`) that named a path that cannot be written (a directory, no permission)."""
    import errno

    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
        return Unwritten(e.errno, e.strerror, str(path))
    return InputError(where, expected, e.strerror or str(e))


def describe(value) -> str:
    """A short, readable description of a bad value for error messages (a NumPy number as the plain number it
    is: `inf`, not `np.float32(inf)`)."""
    return shortened(repr(plain(value)))


def plain(value):
    """A NumPy scalar as the Python number (or bool) it holds; anything else as it is."""
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == () and hasattr(value, "item"):
        return value.item()
    return value


def shortened(text: str, most: int = 40) -> str:
    """Text as written, cut to `most` characters (a 5,000-digit number is not echoed whole)."""
    return text if len(text) <= most else text[: most - 3] + "..."


def one_of(words) -> str:
    """`a, b or c`."""
    words = list(words)
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else words[0]
