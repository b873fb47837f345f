"""grounded's release number (cache keys and rows record it)."""

__version__ = "0.1.0"
