"""Runs test_real_model.py when the real model is installed; exit 77 (CTest: skipped) otherwise."""
import os
import subprocess
import sys
from pathlib import Path

here = Path(__file__).resolve().parent
model = os.environ.get("HEXNPU_MODEL") or str(Path(os.environ.get("HEXNPU_MODEL_DIR", "build/models"))
                                               / "gemma-3-270m-q4_k_m.gguf")
if not Path(model).is_file():
    print(f"SKIPPED: the real model is not installed at {model} (bash scripts/fetch-model.sh BUILD_DIR)")
    sys.exit(77)
env = dict(os.environ, HEXNPU_MODEL=model, PYTHONPATH=str(here.parents[0] / "python"))
sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                          str(here / "test_real_model.py")], env=env))
