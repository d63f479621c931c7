"""Wire formats: topic records, release manifests, signatures, release ids, codebooks and CSV-safe cells."""
