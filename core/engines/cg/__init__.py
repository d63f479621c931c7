"""CG-Kanon and CG-Diverse: severity-weighted k-anonymity and l-diversity (one folder, two engines).

The engines are :mod:`core.engines.cg.kanon` and :mod:`core.engines.cg.diverse`; both run
:func:`core.engines.cg.runner.anonymize_cg`. See :mod:`core.engines.cg.search` for the anytime search,
:mod:`core.engines.cg.state` for the normalised objective and :mod:`core.engines.cg.kernels` for the
numba kernels. Kernels are warmed up like every engine's, by :mod:`core.engines.warmup`.
"""
