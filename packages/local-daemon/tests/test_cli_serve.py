"""`local-daemon serve`: a port out of range is a usage error. (Which modules its start-up path
leaves unimported: tests/internal/test_serve_start_up.py.)"""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.mark.parametrize("port", ["70000", "99999999", "-1"])
def test_port_out_of_range_is_a_usage_error(
    port: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from local_daemon.cli import main

    for argv in (["--port", port], [f"--port={port}"], ["--port", f" {port}"]):
        with pytest.raises(SystemExit) as caught:
            main(["serve", "daemon_support:demo_registry", "--state-dir", str(tmp_path), *argv])
        assert caught.value.code == 64
        assert capsys.readouterr().err.startswith("local-daemon: --port must be 0 to 65535\n")
    assert not (tmp_path / "daemon.pid").exists()
