"""Shared machinery of the hierarchy-free clustering and heterogeneous engines.

Used by ``kmember``, ``lgreedy`` and ``ils`` (paper: "Heterogeneous k-anonymity with iterated local
search", see ``/work/shared/papers/heterogeneous-k-anonymity-iterated-local-search.txt``):

* :mod:`~core.engines.hetero.data`: QI values as a numeric matrix and categorical codes, with the
  domain sizes, ranges and standard deviations the GCP and SIL objectives need; for
  ``bands = "nested"`` (the default) the search's view on hierarchy levels (``nested_data``);
* :mod:`~core.engines.hetero.objective`: from-scratch GCP / SIL of a matching or a clustering
  (the reference the incremental fast path is tested against);
* :mod:`~core.engines.hetero.greedy`: numba kernels of k-member and l-greedy;
* :mod:`~core.engines.hetero.graph`: k-regular bipartite matchings (§5.5 conversion, inverse,
  candidate partner rows);
* :mod:`~core.engines.hetero.state`: the §5 incremental structures and the O(d) move delta;
* :mod:`~core.engines.hetero.fastgain`: the bounded GCP delta used in the move loop;
* :mod:`~core.engines.hetero.search`: local search (Algorithm 2), perturbation, ILS iterations;
* :mod:`~core.engines.hetero.runner`: the anytime driver (chunks, deadline, trace);
* :mod:`~core.engines.hetero.release`: node labels (nested), range / set labels (free) and
  :class:`~core.engines.base.Release`;
* :mod:`~core.engines.hetero.common`: parameter checks shared by the three engines.
"""
