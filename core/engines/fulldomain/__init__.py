"""Full-domain generalization over the lattice.

Optimal, exhaustive, Datafly, random search, and local-recode built on their search.
"""
