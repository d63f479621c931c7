"""Differentially private count tables: OpenDP's exact integer mechanisms, pure (no I/O).

``spec.py`` (the spec's ``[dp]`` table), ``mechanism.py`` (noise, intervals, ε/ρ), ``derive.py`` (the
grouping columns and their public domains from a spec), ``plan.py`` (count tables), ``tables.py``
(:class:`CountTable`), ``blocks.py`` (the budget blocks a set of rows falls in). docs/privacy.md
"Differentially private counts" states the guarantee. This package imports nothing at import time so
that ``core.schema`` can use ``core.dp.spec``.
"""
