"""Pure anonymization core: schemas, hierarchies, encoding, privacy models, metrics and engines.

Nothing in this package performs I/O, reads the environment, or imports faust or SQLAlchemy.
"""
