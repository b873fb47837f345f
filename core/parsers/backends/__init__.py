"""One module (or package) per parser backend; :data:`grounded.parsers.PARSERS` names them. A backend
implements ``_parse`` and ``_transform`` (see docs/backends/writing_a_backend.md)."""
