"""``python -m grounded.cli ...`` runs the ``grounded`` command."""

from __future__ import annotations

from .main import main

raise SystemExit(main())
