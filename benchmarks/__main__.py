"""``python -m benchmarks``: see :mod:`benchmarks.run`."""

from __future__ import annotations

from benchmarks.run import main

raise SystemExit(main())
