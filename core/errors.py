"""One exception hierarchy for everything the library refuses (spec §10).

Every error about an input names the file and the cause, so a CLI can print ``str(err)`` as its
one-line reason.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "escape_controls",
    "GroundedError",
    "InvalidBoxError",
    "InputError",
    "InputNotFoundError",
    "NotAPDFError",
    "NotTextError",
    "CorruptPDFError",
    "EncryptedPDFError",
    "EmptyDocumentError",
    "NoTextLayerError",
    "PageTooLargeError",
    "ParserError",
    "BackendUnavailableError",
    "DeviceUnavailableError",
    "MissingCredentialsError",
    "RemoteServiceError",
    "SchemaError",
    "OutputError",
    "ChunkingError",
    "ModelError",
    "ModelCallError",
    "ModelOutputError",
    "UsageError",
    "UnguardedMainError",
]


_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: invisible formatting characters that reorder or hide text on a terminal (bidi overrides/isolates)
_BIDI = frozenset("\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _escape(ch: str) -> str:
    if ch in _NAMED:
        return _NAMED[ch]
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str, *, whitespace: bool = True) -> str:
    """``text`` with control characters (C0, DEL, C1, bidi overrides) written as escapes
    (``\\n``, ``\\x1b``, ``\\u202e``), so a file name cannot break a log line or drive a terminal
    (ANSI escapes). ``whitespace=False`` leaves newlines, carriage returns and tabs as they are
    (for a caller that collapses whitespace itself)."""
    if text.isprintable() and not any(ch in _BIDI for ch in text):
        return text
    out = []
    for ch in text:
        code = ord(ch)
        control = code < 0x20 or 0x7F <= code < 0xA0 or ch in _BIDI
        if control and not (not whitespace and ch in _NAMED):
            out.append(_escape(ch))
        else:
            out.append(ch)
    return "".join(out)


class GroundedError(Exception):
    """Base of all errors raised by grounded."""


class InvalidBoxError(GroundedError, ValueError):
    """A bounding box lies outside the page or is inverted."""


class InputError(GroundedError):
    """A problem with an input file; ``path`` and ``cause`` are kept as attributes."""

    def __init__(self, path: str | Path, cause: str):
        self.path = str(path)
        self.cause = cause
        super().__init__(f"{escape_controls(self.path)}: {cause}")


class InputNotFoundError(InputError, FileNotFoundError):
    """The input path does not exist or is not a file."""


class NotAPDFError(InputError):
    """The file is not a PDF."""


class NotTextError(InputError):
    """A Document's "text" is a file's raw bytes (a PDF read as text: ``%PDF-``, or mostly control and
    replacement characters), which no splitter can ground; the cause names the reader to install."""


class CorruptPDFError(InputError):
    """The PDF cannot be read (damaged or truncated)."""


class EncryptedPDFError(InputError):
    """The PDF needs a password."""


class EmptyDocumentError(InputError):
    """The PDF has no pages, or nothing could be extracted from it."""


class NoTextLayerError(InputError):
    """Pages have no text layer (scanned/image-only) and OCR is not enabled."""


class PageTooLargeError(InputError):
    """A page exceeds the size limit the parser accepts."""


class ParserError(InputError):
    """A backend failed on this input; the backend's own message is the cause."""


class BackendUnavailableError(GroundedError, ImportError):
    """An optional dependency is missing; the message names the ``pip install`` to run."""

    def __init__(self, what: str, extra: str, package: str | None = None):
        self.what = what
        self.extra = extra
        hint = f"pip install 'grounded[{extra}]'"
        if package:
            hint += f" (or: pip install {package})"
        super().__init__(f"{what} needs the optional dependency '{extra}': {hint}")


class DeviceUnavailableError(GroundedError, RuntimeError):
    """A model was asked to run on a device (``cuda``) this process cannot use; the message names why."""

    def __init__(self, device: str, cause: str):
        self.device = device
        self.cause = cause
        super().__init__(f"device {device!r} is not available: {cause}")


class MissingCredentialsError(GroundedError):
    """A cloud backend's credential environment variable is not set."""

    def __init__(self, backend: str, variable: str, hint: str = ""):
        self.backend = backend
        self.variable = variable
        msg = f"parser '{backend}' needs the environment variable {variable}"
        super().__init__(msg + (f" ({hint})" if hint else ""))


class RemoteServiceError(GroundedError):
    """A cloud service failed after retries (quota, server errors, timeouts)."""


class OutputError(GroundedError, OSError):
    """An output file cannot be written (name too long, no permission, disk full, or it would
    replace one of the inputs); ``path`` and ``cause`` are kept as attributes."""

    def __init__(self, path: str | Path, cause: str):
        self.path = str(path)
        self.cause = cause
        super().__init__(f"{escape_controls(self.path)}: {cause}")


class SchemaError(GroundedError, ValueError):
    """Stored JSON is not a grounded document of a readable schema version."""


class ChunkingError(GroundedError, ValueError):
    """Invalid chunking parameters or an input tree the chunker cannot use."""


class ModelError(GroundedError):
    """An injected language/vision model failed (base of the model errors below)."""


class ModelCallError(ModelError, RemoteServiceError):
    """A model call failed after its retries (rate limit 429, timeout, or another client error);
    ``cause`` names what happened, ``attempts`` how often it was tried."""

    def __init__(self, what: str, cause: str, attempts: int = 1):
        self.what = what
        self.cause = cause
        self.attempts = attempts
        super().__init__(f"{what}: {cause} (after {attempts} attempt{'s' if attempts != 1 else ''})")


class ModelOutputError(ModelError, ValueError):
    """A model answered, but not in the format asked for (malformed JSON, empty text, missing
    items); ``what`` names the request and ``cause`` the defect."""

    def __init__(self, what: str, cause: str):
        self.what = what
        self.cause = cause
        super().__init__(f"{what}: {cause}")


class UsageError(GroundedError, ValueError):
    """Options that cannot be used together or do not apply to the given input."""


class UnguardedMainError(UsageError):
    """Work that starts worker processes with ``spawn`` (``ingest()``, LlamaIndex's
    ``IngestionPipeline.run(num_workers=N)``) runs at the top level of a script without
    ``if __name__ == "__main__":``; every worker would import the script and run it again."""


class ConfigError(GroundedError, ValueError):
    """A configuration that cannot run: an unknown parser or strategy name, an option its class does
    not declare, or a value its declaration refuses (:mod:`grounded.model.options`)."""


class UnknownNameError(ConfigError, ChunkingError):
    """A parser or strategy name no registry knows; ``kind`` ("parser", "strategy"), ``name`` and
    ``known`` (the names that exist, built-in and registered by entry point) are kept as attributes.
    A :class:`ChunkingError` too, which strategy callers catch."""

    def __init__(self, kind: str, name: object, known: list[str] | tuple[str, ...]):
        self.kind = kind
        self.name = name
        self.known = tuple(known)
        super().__init__(f"unknown {kind} {escape_controls(repr(name))}; choose one of: {', '.join(self.known)}")


class NameTakenError(ConfigError, ChunkingError):
    """A class registered under a parser or strategy name another class holds; ``kind``, ``name``,
    ``taken_by`` and ``given`` (the two classes' dotted names) are kept as attributes."""

    def __init__(self, kind: str, name: str, taken_by: str, given: str):
        self.kind = kind
        self.name = name
        self.taken_by = taken_by
        self.given = given
        super().__init__(f"{kind} name {escape_controls(repr(name))} is taken by {taken_by}: register {given} under another name")


class OptionError(ConfigError, ChunkingError):
    """An option a parser or strategy does not take, or a value outside its declaration; ``owner``
    names the parser or strategy (e.g. ``strategy 'semantic'``) and ``option`` the option."""

    def __init__(self, owner: str, option: str, cause: str):
        self.owner = owner
        self.option = option
        self.cause = cause
        super().__init__(f"{owner}: option {option!r} {cause}")


class OptionUsageError(UsageError):
    """A command-line option given to a parser or strategy that does not take it (the command exits
    with the usage code 2, like any other misuse of its options)."""
