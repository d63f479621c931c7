"""Differentially private count tables: OpenDP's exact integer mechanisms, pure (no I/O).

The spec's ``[dp]`` table and the ε/ρ conversions are :mod:`core.dp_spec` (below :mod:`core.schema`, which
holds it); here: ``mechanism.py`` (noise, intervals; the conversions re-exported), ``derive.py`` (the
grouping columns and their public domains from a spec), ``plan.py`` (count tables), ``tables.py``
(:class:`CountTable`), ``blocks.py`` (the budget blocks a set of rows falls in). docs/privacy.md
"Differentially private counts" states the guarantee. This package imports nothing at import time.
"""
