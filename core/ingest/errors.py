"""Typed errors of ``grounded ingest``: a job that cannot run at all (every one is a
:class:`~grounded.errors.GroundedError`: the CLI prints one line and exits non-zero)."""

from __future__ import annotations

from ..errors import GroundedError, UnguardedMainError

__all__ = [
    "IngestError",
    "NoInputsError",
    "OutputLockedError",
    "ConfigurationMismatchError",
    "UnguardedMainError",
]


class IngestError(GroundedError):
    """The job cannot run at all (no input, a worker that cannot be set up, ...)."""


class NoInputsError(IngestError):
    """The inputs name no file at all (an empty folder, an empty list file)."""


class OutputLockedError(IngestError):
    """Another ingest is writing into the same output folder (one writer at a time)."""


class ConfigurationMismatchError(IngestError):
    """The output folder holds an index made with another configuration (one configuration per
    folder: use another folder, or ``--replace`` / ``replace=True``)."""

