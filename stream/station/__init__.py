"""The station side: push a station's reports, preview them against the ledger, simulate stations."""
