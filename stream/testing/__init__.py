"""Real services for tests and benchmarks.

A throwaway PostgreSQL, the bundled broker, a worker scenario and generated reports.
"""
