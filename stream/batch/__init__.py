"""Batch runs (``anonstream anonymize``): history against a ledger and the publication order of rows."""
