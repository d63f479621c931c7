"""``anonstream keys init``: every secret file docker-compose.yml mounts, in its format, 0600, never overwritten."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
import yaml

from stream.cli.main import main
from stream.config.secrets import weak_key, weak_token

ROOT = Path(__file__).resolve().parents[3]


def test_init_writes_every_secret_compose_mounts_and_never_overwrites(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    folder = tmp_path / "secrets"
    assert main(["keys", "init", "--secrets-dir", str(folder)]) == 0
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    assert {p.name for p in folder.iterdir()} == set(compose["secrets"])
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    for path in folder.iterdir():
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name
    read = {p.name: p.read_text().strip() for p in folder.iterdir()}
    for name in ("fingerprint_key", "signing_key"):
        assert len(read[name]) == 64 and int(read[name], 16) >= 0 and weak_key(read[name]) is None
    assert read["signing_key"] != read["fingerprint_key"]
    assert weak_token(read["operator_token"]) is None and len(read["postgres_password"]) >= 32
    assert "chmod 0444" in capsys.readouterr().out
    # a second run refuses and writes nothing: the ledger's fingerprints depend on fingerprint_key
    (folder / "grafana_admin_password").unlink()
    assert main(["keys", "init", "--secrets-dir", str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "never overwrites" in err and "fingerprint_key" in err
    assert not (folder / "grafana_admin_password").exists()
    assert {p.name: p.read_text().strip() for p in folder.iterdir()} == {k: v for k, v in read.items()
                                                                           if k != "grafana_admin_password"}


def test_init_tightens_a_loose_folder_and_never_writes_through_a_link(tmp_path: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import stat

    from stream.cli.main import main

    loose = tmp_path / "loose"
    loose.mkdir()
    os.chmod(loose, 0o777)
    assert main(["keys", "init", "--secrets-dir", str(loose)]) == 0
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700  # it said so; now it is
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "signing_key").symlink_to(tmp_path / "elsewhere")  # dangling
    capsys.readouterr()
    assert main(["keys", "init", "--secrets-dir", str(linked)]) == 2
    err = capsys.readouterr().err
    assert "already has signing_key" in err and "Traceback" not in err
    assert sorted(p.name for p in linked.iterdir()) == ["signing_key"] and not (tmp_path / "elsewhere").exists()
