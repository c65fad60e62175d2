"""Runs test_ggml_plugin.py when llama-cpp-python 0.3.36 is installed; exit 77 (CTest: skipped)
otherwise. The real-model tests inside skip themselves when the model is not installed."""
import importlib.metadata
import os
import subprocess
import sys
from pathlib import Path

try:
    version = importlib.metadata.version("llama_cpp_python")
except importlib.metadata.PackageNotFoundError:
    print("SKIPPED: llama-cpp-python is not installed (bash scripts/install-llama-cpp.sh)")
    sys.exit(77)
if version != "0.3.36":
    print(f"SKIPPED: llama-cpp-python {version} is installed; the plugin is built for 0.3.36's ggml")
    sys.exit(77)
here = Path(__file__).resolve().parent
model = Path(os.environ.get("HEXNPU_MODEL_DIR", "build/models")) / "gemma-3-270m-q4_k_m.gguf"
env = dict(os.environ, HEXNPU_MODEL=str(model))
sys.exit(subprocess.call([sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                          str(here / "test_ggml_plugin.py")], env=env))
