"""Mondrian: multidimensional top-down partitioning."""
