import os
import subprocess
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def hexnpu_bin() -> str:
    path = os.environ.get("HEXNPU_BIN") or str(Path(__file__).resolve().parents[2] / "build" / "bin" / "hexnpu")
    if not Path(path).is_file():
        pytest.fail(f"hexnpu binary not found at {path} (build first, or set HEXNPU_BIN)")
    return path


@pytest.fixture
def run(hexnpu_bin):
    """Runs `hexnpu ARGS...`; returns the CompletedProcess (text mode)."""

    def _run(*args, check=True):
        proc = subprocess.run([hexnpu_bin, *map(str, args)], capture_output=True, text=True, timeout=300)
        if check and proc.returncode != 0:
            raise AssertionError(f"hexnpu {' '.join(map(str, args))} failed ({proc.returncode}):\n{proc.stderr}")
        return proc

    return _run
