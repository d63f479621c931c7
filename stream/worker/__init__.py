"""The worker: the faust app, ingest, windows and release orchestration.

Sample, anonymize, verify, write the ledger, publish; and the plumbing around it.
"""
