"""Full-domain generalization lattice: nodes are level vectors, evaluated on encoded data."""

from core.lattice.evaluator import NodeEvaluator, NodeResult
from core.lattice.space import Lattice

__all__ = ["Lattice", "NodeEvaluator", "NodeResult"]
