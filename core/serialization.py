"""Lossless JSON of trees and chunks and atomic writes (public path; the code lives in
:mod:`grounded.io.codec` and :mod:`grounded.io.atomic`)."""

from __future__ import annotations

from .io.atomic import *  # noqa: F403
from .io.atomic import __all__ as _atomic_all
from .io.codec import *  # noqa: F403
from .io.codec import __all__ as _codec_all

__all__ = [*_codec_all, *_atomic_all]
