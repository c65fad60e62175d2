"""The real ggml (llama-cpp-python's libggml.so.0, the copy libllama links) through ctypes, with
hexnpu's plugin loaded into it: the public ggml API only, for the plugin tests and the
conformance table (tests/ggml/ggml_conformance.py)."""

import ctypes as C
import os
from pathlib import Path

import numpy as np

P = C.c_void_p
I64 = C.c_int64
SZ = C.c_size_t

# ggml_type ids (the same in hexnpu and ggml); names as ggml_type_name prints them.
TYPES = {"f32": 0, "f16": 1, "q4_0": 2, "q4_1": 3, "q5_0": 6, "q5_1": 7, "q8_0": 8, "q2_K": 10, "q3_K": 11,
         "q4_K": 12, "q5_K": 13, "q6_K": 14, "iq4_nl": 20, "i32": 26, "i64": 27, "bf16": 30, "mxfp4": 39, "q1_0": 41,
         "q2_0": 42}
DEV_GPU = 1
DEV_CPU = 0


_registries = {}


class InitParams(C.Structure):
    _fields_ = [("mem_size", SZ), ("mem_buffer", P), ("no_alloc", C.c_bool)]


def package_lib_dir():
    import llama_cpp
    return Path(llama_cpp.__file__).parent / "lib"


def _sig(lib, name, res, *args):
    f = getattr(lib, name)
    f.restype = res
    f.argtypes = list(args)
    return f


class Ggml:
    """libggml (+ libggml-base) of the package. Loading libggml.so.0, the name libllama's
    DT_NEEDED uses, gives the one ggml instance llama.cpp also sees."""

    def __init__(self):
        d = package_lib_dir()
        self.lib = C.CDLL(str(d / "libggml.so.0"), mode=C.RTLD_GLOBAL)
        self.base = C.CDLL(str(d / "libggml-base.so.0"), mode=C.RTLD_GLOBAL)
        L, B = self.lib, self.base
        self.backend_load = _sig(L, "ggml_backend_load", P, C.c_char_p)
        self.reg_name = _sig(L, "ggml_backend_reg_name", C.c_char_p, P)
        self.reg_dev_count = _sig(L, "ggml_backend_reg_dev_count", SZ, P)
        self.reg_proc = _sig(L, "ggml_backend_reg_get_proc_address", P, P, C.c_char_p)
        self.dev_count = _sig(L, "ggml_backend_dev_count", SZ)
        self.dev_get = _sig(L, "ggml_backend_dev_get", P, SZ)
        self.dev_by_name = _sig(L, "ggml_backend_dev_by_name", P, C.c_char_p)
        self.dev_name = _sig(L, "ggml_backend_dev_name", C.c_char_p, P)
        self.dev_description = _sig(L, "ggml_backend_dev_description", C.c_char_p, P)
        self.dev_type = _sig(L, "ggml_backend_dev_type", C.c_int, P)
        self.dev_init = _sig(L, "ggml_backend_dev_init", P, P, C.c_char_p)
        self.dev_buft = _sig(L, "ggml_backend_dev_buffer_type", P, P)
        self.dev_supports_op = _sig(L, "ggml_backend_dev_supports_op", C.c_bool, P, P)
        self.init_by_type = _sig(L, "ggml_backend_init_by_type", P, C.c_int, C.c_char_p)
        self.backend_free = _sig(B, "ggml_backend_free", None, P)
        self.graph_compute = _sig(B, "ggml_backend_graph_compute", C.c_int, P, P)
        self.buft_name = _sig(B, "ggml_backend_buft_name", C.c_char_p, P)
        self.alloc_ctx = _sig(B, "ggml_backend_alloc_ctx_tensors", P, P, P)
        self.alloc_ctx_buft = _sig(B, "ggml_backend_alloc_ctx_tensors_from_buft", P, P, P)
        self.buffer_free = _sig(B, "ggml_backend_buffer_free", None, P)
        self.tensor_set = _sig(B, "ggml_backend_tensor_set", None, P, P, SZ, SZ)
        self.tensor_get = _sig(B, "ggml_backend_tensor_get", None, P, P, SZ, SZ)
        self.init = _sig(B, "ggml_init", P, InitParams)
        self.free = _sig(B, "ggml_free", None, P)
        self.tensor_overhead = _sig(B, "ggml_tensor_overhead", SZ)
        self.graph_overhead = _sig(B, "ggml_graph_overhead", SZ)
        self.nbytes = _sig(B, "ggml_nbytes", SZ, P)
        self.row_size = _sig(B, "ggml_row_size", SZ, C.c_int, I64)
        self.quantize_chunk = _sig(B, "ggml_quantize_chunk", SZ, C.c_int, P, P, I64, I64, I64, P)
        self.new_graph = _sig(B, "ggml_new_graph", P, P)
        self.build_forward = _sig(B, "ggml_build_forward_expand", None, P, P)
        self.new_tensor = {n: _sig(B, f"ggml_new_tensor_{n}d", P, P, C.c_int, *([I64] * n)) for n in (1, 2, 3, 4)}

    def op(self, name, *argtypes):
        """A graph-building function ggml_<name>(ctx, ...) -> tensor."""
        return _sig(self.base, "ggml_" + name, P, P, *argtypes)

    def load_plugin(self, path):
        """The plugin's registry, loaded once per process (ggml would register it again)."""
        key = str(Path(path).resolve())
        if key not in _registries:
            reg = self.backend_load(key.encode())
            if not reg:
                raise RuntimeError(f"ggml_backend_load({path}) refused the plugin")
            _registries[key] = reg
        return _registries[key]


def plugin_path():
    return Path(os.environ["HEXNPU_GGML_PLUGIN"])


class Context:
    """A no_alloc ggml context whose tensors are allocated in one buffer type (allocate())."""

    def __init__(self, g, n_tensors=64):
        self.g = g
        self.ctx = g.init(InitParams(g.tensor_overhead() * n_tensors + g.graph_overhead(), None, True))
        self.buffer = None

    def tensor(self, type_name, *ne):
        return self.g.new_tensor[len(ne)](self.ctx, TYPES[type_name], *ne)

    def allocate(self, backend=None, buft=None):
        self.buffer = self.g.alloc_ctx(self.ctx, backend) if backend else self.g.alloc_ctx_buft(self.ctx, buft)
        if not self.buffer:
            raise RuntimeError("ggml could not allocate the context's tensors")

    def close(self):
        if self.buffer:
            self.g.buffer_free(self.buffer)
        self.g.free(self.ctx)


def tensor_bytes(g, type_name, values):
    """The bytes of a tensor of this type holding values (rows along the last numpy axis):
    converted or quantized by ggml itself, so both backends get the same bytes."""
    v = np.ascontiguousarray(values, dtype=np.float32)
    if type_name == "f32":
        return v.tobytes()
    if type_name in ("i32", "i64"):
        return np.ascontiguousarray(values, dtype=np.int32 if type_name == "i32" else np.int64).tobytes()
    n_per_row = v.shape[-1]
    nrows = v.size // n_per_row
    out = C.create_string_buffer(g.row_size(TYPES[type_name], n_per_row) * nrows)
    g.quantize_chunk(TYPES[type_name], v.ctypes.data, out, 0, nrows, n_per_row, None)
    return out.raw
