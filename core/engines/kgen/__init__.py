"""KGEN: a genetic algorithm over the generalization lattice (operators and bounds)."""
