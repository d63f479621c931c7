from stream.wire.manifest import public_diagnostics


def test_matching_and_oversized_diagnostics_are_never_published() -> None:
    diag = {"matching": [[0, 1, 2]], "front": [{"k": 5, "GLM": 0.3}], "huge": list(range(100_000)), "levels": {"a": 1}}
    out = public_diagnostics(diag)
    assert "matching" not in out and "huge" not in out
    assert out["front"] == [{"k": 5, "GLM": 0.3}] and out["levels"] == {"a": 1}
