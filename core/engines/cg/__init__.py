"""Shared pieces of the severity-weighted CG engines (CG-Kanon and CG-Diverse).

See :mod:`core.engines.cg.search` for the anytime search, :mod:`core.engines.cg.state` for the
normalised objective and :mod:`core.engines.cg.kernels` for the numba kernels; the engines
themselves are :mod:`core.engines.cg.kanon` and :mod:`core.engines.cg.diverse`.
:func:`warm_up` loads the kernels ahead of the first real batch.
"""

from core.engines.cg.runner import warm_up

__all__ = ["warm_up"]
