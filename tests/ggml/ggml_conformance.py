#!/usr/bin/env python3
"""Per-op conformance of hexnpu's NPU through the real ggml: for every op the virtual NPU
supports, small graphs built with llama-cpp-python's ggml run on device HTP0 (hexnpu's plugin,
weights flat in HTP0 and tiled in HTP0-REPACK) and on ggml's own CPU backend; the results are
compared by NMSE as test-backend-ops does. Writes the table to docs/ggml-conformance.md (-o) and
exits 1 when a case fails or is refused by the plugin.

  python3 tests/ggml/ggml_conformance.py [--plugin build/lib/libggml-hexagon.so] [-o FILE] [-k SUBSTR]

Thresholds: 1e-7 for ops that are exact in fp32 up to rounding (ADD..DIV, SCALE, SQR, NEG);
1e-6 for ops through transcendental or reciprocal approximations (SQRT, SILU, norms, GLU, SOFT_MAX: the
HVX helpers' documented errors are ~1e-7 relative); 5e-4 for matrix products, as
test-backend-ops: both sides quantize activations to 8 bits (ggml to Q8_0/Q8_K blocks, hexnpu
to its per-block int8 scale), each rounding error ~2^-8 relative per element, averaged over K.
"""

import argparse
import ctypes as C
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
from ggml_lib import DEV_CPU, Context, Ggml, tensor_bytes

EXACT, MATH, MATMUL = 1e-7, 1e-6, 5e-4
F = C.c_float
I64 = C.c_int64


@dataclass
class Case:
    op: str
    desc: str
    tol: float
    # build(g, weights, acts, rng) -> (output tensor, [(tensor, bytes)]) ; weights/acts: Context
    build: Callable
    uses_weights: bool = False
    out_dtype: type = np.float32  # the output tensor's element type as numpy reads it
    row_set: int = 0  # > 0: rows of this many elements compared as sets (ggml's TOP_K leaves their order open)


def dims(ne):
    return "[" + ",".join(map(str, ne)) + "]"


def rand(rng, *shape, lo=-1.0, hi=1.0):
    return rng.uniform(lo, hi, size=shape[::-1]).astype(np.float32)  # numpy order: ne reversed


def binary_cases():
    shapes = [((10, 5, 4, 3), (10, 5, 4, 3)), ((10, 5, 4, 3), (10, 1, 1, 1)), ((10, 5, 4, 3), (10, 5, 1, 3)),
              ((33, 7, 1, 1), (33, 1, 1, 1)), ((129, 1, 1, 1), (129, 1, 1, 1))]
    for name in ("add", "sub", "mul", "div"):
        for na, nb in shapes:
            def build(g, w, a, rng, name=name, na=na, nb=nb):
                x, y = a.tensor("f32", *na), a.tensor("f32", *nb)
                lo = 0.5 if name == "div" else -1.0
                return g.op(name, C.c_void_p, C.c_void_p)(a.ctx, x, y), [
                    (x, tensor_bytes(g, "f32", rand(rng, *na))), (y, tensor_bytes(g, "f32", rand(rng, *nb, lo=lo)))]
            yield Case(name.upper(), f"ne_a={dims(na)},ne_b={dims(nb)}", EXACT, build)
        # 16-bit rows (dst of a's type), computed in fp32 and rounded once.
        for ta, tb in (("f16", "f16"), ("f16", "f32"), ("bf16", "bf16")):
            def build(g, w, a, rng, name=name, ta=ta, tb=tb):
                x, y = a.tensor(ta, 33, 7, 2), a.tensor(tb, 33, 1, 2)
                lo = 0.5 if name == "div" else -1.0
                return g.op(name, C.c_void_p, C.c_void_p)(a.ctx, x, y), [
                    (x, tensor_bytes(g, ta, rand(rng, 33, 7, 2))), (y, tensor_bytes(g, tb, rand(rng, 33, 1, 2, lo=lo)))]
            yield Case(name.upper(), f"type_a={ta},type_b={tb},ne_a=[33,7,2],ne_b=[33,1,2]", EXACT, build,
                       out_dtype=np.float16 if ta == "f16" else "bf16")
    # A one-element src1 row (broadcast along dim 0), and ADD_ID: each token's expert bias row.
    def scalar(g, w, a, rng):
        x, y = a.tensor("f32", 40, 5, 3), a.tensor("f32", 1, 5, 3)
        return g.op("add", C.c_void_p, C.c_void_p)(a.ctx, x, y), [
            (x, tensor_bytes(g, "f32", rand(rng, 40, 5, 3))), (y, tensor_bytes(g, "f32", rand(rng, 1, 5, 3)))]
    yield Case("ADD", "ne_a=[40,5,3],ne_b=[1,5,3]", EXACT, scalar)
    def add_id(g, w, a, rng):
        x, bias, ids = a.tensor("f32", 129, 4, 7), a.tensor("f32", 129, 8), a.tensor("i32", 4, 7)
        return g.op("add_id", C.c_void_p, C.c_void_p, C.c_void_p)(a.ctx, x, bias, ids), [
            (x, tensor_bytes(g, "f32", rand(rng, 129, 4, 7))), (bias, tensor_bytes(g, "f32", rand(rng, 129, 8))),
            (ids, tensor_bytes(g, "i32", rng.integers(0, 8, size=(7, 4))))]
    yield Case("ADD_ID", "ne0=129,n_used=4,n_tokens=7,n_experts=8", EXACT, add_id)


def unary_cases():
    # ggml's CPU GELU reads a table indexed by fp16(x) (GGML_GELU_FP16): fp16 rounding of x, ~1e-7 NMSE.
    specs = [("sqr", EXACT, -1.0), ("sqrt", MATH, 0.0), ("neg", EXACT, -1.0), ("silu", MATH, -4.0),
             ("relu", EXACT, -4.0), ("abs", EXACT, -4.0), ("exp", MATH, -4.0), ("sigmoid", MATH, -4.0),
             ("gelu", MATMUL, -4.0), ("gelu_quick", MATH, -4.0), ("sin", MATH, -4.0), ("cos", MATH, -4.0),
             ("tanh", MATH, -4.0), ("log", MATH, 0.05), ("softplus", MATH, -30.0),
             ("gelu_erf", MATH, -4.0), ("step", EXACT, -4.0)]
    for name, tol, lo in specs:
        for ne in ((128, 2, 2, 2), (7, 3, 5, 2)):
            def build(g, w, a, rng, name=name, ne=ne, lo=lo):
                x = a.tensor("f32", *ne)
                return g.op(name, C.c_void_p)(a.ctx, x), [(x, tensor_bytes(g, "f32", rand(rng, *ne, lo=lo, hi=4.0)))]
            yield Case(name.upper(), f"ne={dims(ne)}", tol, build)
    for s, b in ((0.25, 0.0), (-3.0, 1.5)):
        def build(g, w, a, rng, s=s, b=b):
            x = a.tensor("f32", 64, 5, 3)
            return g.op("scale_bias", C.c_void_p, F, F)(a.ctx, x, s, b), [(x, tensor_bytes(g, "f32", rand(rng, 64, 5, 3)))]
        yield Case("SCALE", f"ne=[64,5,3],s={s},b={b}", EXACT, build)
    def clamp(g, w, a, rng):
        x = a.tensor("f32", 33, 7, 2)
        return g.op("clamp", C.c_void_p, F, F)(a.ctx, x, -0.5, 0.75), [(x, tensor_bytes(g, "f32", rand(rng, 33, 7, 2)))]
    yield Case("CLAMP", "ne=[33,7,2],min=-0.5,max=0.75", EXACT, clamp)
    def fill(g, w, a, rng):
        x = a.tensor("f32", 33, 5, 2)
        return g.op("fill", C.c_void_p, F)(a.ctx, x, 1.5), [(x, tensor_bytes(g, "f32", rand(rng, 33, 5, 2)))]
    yield Case("FILL", "ne=[33,5,2],value=1.5", EXACT, fill)
    for slope in (0.1, -0.5):
        def leaky_relu(g, w, a, rng, slope=slope):
            x = a.tensor("f32", 40, 6, 2)
            return g.op("leaky_relu", C.c_void_p, F, C.c_bool)(a.ctx, x, slope, False), [
                (x, tensor_bytes(g, "f32", rand(rng, 40, 6, 2, lo=-4.0, hi=4.0)))]
        yield Case("LEAKY_RELU", f"ne=[40,6,2],slope={slope}", EXACT, leaky_relu)
    def pad(g, w, a, rng):  # ggml_pad: zeros after the end of each dimension
        x = a.tensor("f32", 33, 5, 2)
        I = C.c_int
        return g.op("pad", C.c_void_p, I, I, I, I)(a.ctx, x, 7, 2, 1, 0), [(x, tensor_bytes(g, "f32", rand(rng, 33, 5, 2)))]
    yield Case("PAD", "ne=[33,5,2],pad=[7,2,1,0]", EXACT, pad)


def reduce_cases():
    """Row sums, means and inclusive prefix sums (fp32 sums in another order: the math bound)."""
    for name in ("sum_rows", "mean", "cumsum"):
        for ne in ((10, 5, 4, 3), (4096, 3, 1, 1), (33, 1, 1, 1)):
            def build(g, w, a, rng, name=name, ne=ne):
                x = a.tensor("f32", *ne)
                return g.op(name, C.c_void_p)(a.ctx, x), [(x, tensor_bytes(g, "f32", rand(rng, *ne)))]
            yield Case(name.upper(), f"ne={dims(ne)}", MATH, build)
    for ne in ((10, 5, 4, 3), (262144, 1, 1, 1)):
        def build(g, w, a, rng, ne=ne):
            x = a.tensor("f32", *ne)
            return g.op("sum", C.c_void_p)(a.ctx, x), [(x, tensor_bytes(g, "f32", rand(rng, *ne)))]
        yield Case("SUM", f"ne={dims(ne)}", MATH, build)


def norm_cases():
    for name in ("rms_norm", "norm", "l2_norm"):
        for ne, eps in (((64, 5, 3), 1e-6), ((33, 7), 1e-5), ((640, 4), 1e-6)):
            def build(g, w, a, rng, name=name, ne=ne, eps=eps):
                x = a.tensor("f32", *ne)
                return g.op(name, C.c_void_p, F)(a.ctx, x, eps), [(x, tensor_bytes(g, "f32", rand(rng, *ne, lo=-3.0, hi=3.0)))]
            yield Case(name.upper(), f"ne={dims(ne)},eps={eps}", MATH, build)


def glu_cases():
    for name in ("geglu_split", "swiglu_split", "reglu_split", "geglu_erf_split", "geglu_quick_split"):
        for ne in ((128, 4), (2048, 3), (33, 2, 3)):
            def build(g, w, a, rng, name=name, ne=ne):
                x, gate = a.tensor("f32", *ne), a.tensor("f32", *ne)
                return g.op(name, C.c_void_p, C.c_void_p)(a.ctx, x, gate), [
                    (x, tensor_bytes(g, "f32", rand(rng, *ne, lo=-4.0, hi=4.0))),
                    (gate, tensor_bytes(g, "f32", rand(rng, *ne, lo=-4.0, hi=4.0)))]
            yield Case(name.rsplit("_", 1)[0].upper(), f"split,ne={dims(ne)}", MATH, build)
    # The fused form: [x | gate] rows ([gate | x] swapped), read by the NPU as two half-row views.
    for name in ("geglu", "swiglu", "geglu_swapped", "swiglu_swapped", "reglu", "geglu_erf", "geglu_quick_swapped"):
        def build(g, w, a, rng, name=name):
            x = a.tensor("f32", 256, 3, 2)
            return g.op(name, C.c_void_p)(a.ctx, x), [(x, tensor_bytes(g, "f32", rand(rng, 256, 3, 2, lo=-4.0, hi=4.0)))]
        yield Case(name.removesuffix("_swapped").upper(), f"fused{',swapped' if 'swapped' in name else ''},ne=[256,3,2]",
                   MATH, build)
    # GPT-OSS's GLU: x capped at limit, the gate clamped to +-limit and offset by 1.
    def swiglu_oai(g, w, a, rng):
        x, gate = a.tensor("f32", 96, 4), a.tensor("f32", 96, 4)
        return g.op("swiglu_oai", C.c_void_p, C.c_void_p, F, F)(a.ctx, x, gate, 1.702, 7.0), [
            (x, tensor_bytes(g, "f32", rand(rng, 96, 4, lo=-10.0, hi=10.0))),
            (gate, tensor_bytes(g, "f32", rand(rng, 96, 4, lo=-10.0, hi=10.0)))]
    yield Case("SWIGLU_OAI", "split,ne=[96,4],alpha=1.702,limit=7", MATH, swiglu_oai)
    def swiglu_clamp(g, w, a, rng):
        x, gate = a.tensor("f32", 96, 4), a.tensor("f32", 96, 4)
        return g.op("swiglu_clamp", C.c_void_p, C.c_void_p, F)(a.ctx, x, gate, 7.0), [
            (x, tensor_bytes(g, "f32", rand(rng, 96, 4, lo=-10.0, hi=10.0))),
            (gate, tensor_bytes(g, "f32", rand(rng, 96, 4, lo=-10.0, hi=10.0)))]
    yield Case("SWIGLU_CLAMP", "split,ne=[96,4],limit=7", MATH, swiglu_clamp)


def layout_cases():
    """CONCAT along dims 0, 1 and 2 (a permuted second source too), REPEAT by factors on several dims."""
    permute = lambda g: g.op("permute", C.c_void_p, C.c_int, C.c_int, C.c_int, C.c_int)  # noqa: E731
    for dim, nb, permuted in ((0, (3, 5, 4, 2), False), (2, (10, 5, 3, 2), True), (1, (10, 2, 4, 2), False)):
        def build(g, w, a, rng, dim=dim, nb=nb, permuted=permuted):
            x = a.tensor("f32", 10, 5, 4, 2)
            y_ne = (nb[0], nb[2], nb[1], nb[3]) if permuted else nb  # permuted: b's storage, seen as nb
            y = a.tensor("f32", *y_ne)
            b = permute(g)(a.ctx, y, 0, 2, 1, 3) if permuted else y
            return g.op("concat", C.c_void_p, C.c_void_p, C.c_int)(a.ctx, x, b, dim), [
                (x, tensor_bytes(g, "f32", rand(rng, 10, 5, 4, 2))), (y, tensor_bytes(g, "f32", rand(rng, *y_ne)))]
        yield Case("CONCAT", f"ne_a=[10,5,4,2],ne_b={dims(nb)},dim={dim}{',b=permuted' if permuted else ''}", EXACT, build)
    for ne, nr in (((10, 5, 1, 1), (3, 2, 2, 1)), ((1, 4, 1, 1), (33, 1, 2, 1))):
        def build(g, w, a, rng, ne=ne, nr=nr):
            x = a.tensor("f32", *ne)
            target = a.tensor("f32", *[n * r for n, r in zip(ne, nr)])
            return g.op("repeat", C.c_void_p, C.c_void_p)(a.ctx, x, target), [(x, tensor_bytes(g, "f32", rand(rng, *ne)))]
        yield Case("REPEAT", f"ne={dims(ne)},nr={dims(nr)}", EXACT, build)
    for shifts in ((3, -2, 1, 0), (-9, 0, 0, 1)):
        def build(g, w, a, rng, shifts=shifts):
            x = a.tensor("f32", 10, 5, 4, 2)
            I = C.c_int
            return g.op("roll", C.c_void_p, I, I, I, I)(a.ctx, x, *shifts), [(x, tensor_bytes(g, "f32", rand(rng, 10, 5, 4, 2)))]
        yield Case("ROLL", f"ne=[10,5,4,2],shifts={dims(shifts)}", EXACT, build)


def sort_cases():
    """ARGSORT both ways over distinct keys (exact indices) and TOP_K over a sampler-sized row (the
    k indices compared as a set: ggml leaves their order open)."""
    for order in (0, 1):
        def build(g, w, a, rng, order=order):
            x = a.tensor("f32", 1000, 3)
            keys = np.stack([rng.permutation(1000) for _ in range(3)]).astype(np.float32) / 4
            return g.op("argsort", C.c_void_p, C.c_int)(a.ctx, x, order), [(x, tensor_bytes(g, "f32", keys))]
        yield Case("ARGSORT", f"ne=[1000,3],distinct,order={'desc' if order else 'asc'}", EXACT, build, out_dtype=np.int32)
    def top_k(g, w, a, rng):
        x = a.tensor("f32", 32000, 2)
        keys = np.stack([rng.permutation(32000) for _ in range(2)]).astype(np.float32) / 8
        return g.op("top_k", C.c_void_p, C.c_int)(a.ctx, x, 40), [(x, tensor_bytes(g, "f32", keys))]
    yield Case("TOP_K", "ne=[32000,2],distinct,k=40", EXACT, top_k, out_dtype=np.int32, row_set=40)
    # ARGMAX: ties (the last index of equal maxima) and a sampler's logits over Gemma 3's vocabulary.
    for ne, ties in (((4096, 5), True), ((262144, 2), False)):
        def argmax(g, w, a, rng, ne=ne, ties=ties):
            x = a.tensor("f32", *ne)
            keys = rng.integers(-9, 10, size=ne[::-1]).astype(np.float32) if ties else rand(rng, *ne, lo=-30.0, hi=30.0)
            return g.op("argmax", C.c_void_p)(a.ctx, x), [(x, tensor_bytes(g, "f32", keys))]
        yield Case("ARGMAX", f"ne={dims(ne)},{'ties' if ties else 'uniform'}", 0.0, argmax, out_dtype=np.int32)


def softmax_cases():
    # (ne, mask ne, scale): a mask per slice, per head, broadcast over dim 2, with rows beyond ne1
    specs = [((33, 5, 4, 1), (33, 5, 1, 1), 0.125), ((33, 5, 4, 1), (33, 5, 4, 1), 1.0),
             ((16, 3, 4, 2), (16, 3, 1, 2), 1.0), ((256, 7, 4, 1), (256, 64, 1, 1), 0.0625)]
    for ne, mne, scale in specs:
        def build(g, w, a, rng, ne=ne, mne=mne, scale=scale):
            x, m = a.tensor("f32", *ne), a.tensor("f32", *mne)
            mask = np.where(rng.uniform(size=mne[::-1]) < 0.2, -np.inf, rand(rng, *mne)).astype(np.float32)
            return g.op("soft_max_ext", C.c_void_p, C.c_void_p, F, F)(a.ctx, x, m, scale, 0.0), [
                (x, tensor_bytes(g, "f32", rand(rng, *ne, lo=-4.0, hi=4.0))), (m, tensor_bytes(g, "f32", mask))]
        yield Case("SOFT_MAX", f"ne={dims(ne)},mask=f32,ne_mask={dims(mne)},scale={scale}", MATH, build)
    # An F16 mask (llama.cpp's with flash attention off, in some versions), ALiBi slopes over 8 and 6
    # heads, no mask at all.
    for ne, mtype, max_bias in (((64, 5, 8, 1), "f16", 0.0), ((64, 5, 8, 1), "f16", 8.0), ((33, 4, 6, 1), "f32", 8.0),
                                ((100, 3, 2, 1), None, 0.0)):
        def build(g, w, a, rng, ne=ne, mtype=mtype, max_bias=max_bias):
            x = a.tensor("f32", *ne)
            inputs = [(x, tensor_bytes(g, "f32", rand(rng, *ne, lo=-4.0, hi=4.0)))]
            m = None
            if mtype:
                m = a.tensor(mtype, ne[0], ne[1])
                mask = np.where(rng.uniform(size=(ne[1], ne[0])) < 0.2, -np.inf, rand(rng, ne[0], ne[1])).astype(np.float32)
                inputs.append((m, tensor_bytes(g, mtype, mask)))
            return g.op("soft_max_ext", C.c_void_p, C.c_void_p, F, F)(a.ctx, x, m, 0.5, max_bias), inputs
        yield Case("SOFT_MAX", f"ne={dims(ne)},mask={mtype or 'none'},max_bias={max_bias}", MATH, build)


def copy_cases():
    """F32 copies; the source a permuted view (rows strided across the original tensor)."""
    permute = lambda g: g.op("permute", C.c_void_p, C.c_int, C.c_int, C.c_int, C.c_int)  # noqa: E731
    for ne, axes in (((10, 5, 4, 3), (0, 2, 1, 3)), ((256, 7, 4, 1), (0, 2, 1, 3)), ((9, 5, 4, 3), (0, 1, 3, 2))):
        def build(g, w, a, rng, ne=ne, axes=axes):
            x = a.tensor("f32", *ne)
            return g.op("cont", C.c_void_p)(a.ctx, permute(g)(a.ctx, x, *axes)), [
                (x, tensor_bytes(g, "f32", rand(rng, *ne)))]
        yield Case("CONT", f"ne={dims(ne)},permute={dims(axes)}", EXACT, build)
    def cont_2d(g, w, a, rng):  # attention's merge of the heads: [256, 4, 3] permuted -> [1024, 3]
        x = a.tensor("f32", 256, 3, 4)
        view = permute(g)(a.ctx, x, 0, 2, 1, 3)
        return g.op("cont_2d", C.c_void_p, I64, I64)(a.ctx, view, 1024, 3), [(x, tensor_bytes(g, "f32", rand(rng, 256, 3, 4)))]
    yield Case("CONT", "ne=[256,3,4],permute=[0,2,1,3],to=[1024,3]", EXACT, cont_2d)
    def dup(g, w, a, rng):
        x = a.tensor("f32", 10, 5, 4, 3)
        return g.op("dup", C.c_void_p)(a.ctx, x), [(x, tensor_bytes(g, "f32", rand(rng, 10, 5, 4, 3)))]
    yield Case("DUP", "ne=[10,5,4,3]", EXACT, dup)
    def cpy(g, w, a, rng):
        x, y = a.tensor("f32", 256, 3, 2), a.tensor("f32", 256, 3, 2)
        return g.op("cpy", C.c_void_p, C.c_void_p)(a.ctx, x, y), [(x, tensor_bytes(g, "f32", rand(rng, 256, 3, 2)))]
    yield Case("CPY", "f32->f32,ne=[256,3,2]", EXACT, cpy)
    for src_t, dst_t in (("f32", "f16"), ("f16", "f32"), ("f32", "bf16")):
        def convert(g, w, a, rng, src_t=src_t, dst_t=dst_t):
            x, y = a.tensor(src_t, 96, 5, 2), a.tensor(dst_t, 96, 5, 2)
            return g.op("cpy", C.c_void_p, C.c_void_p)(a.ctx, x, y), [(x, tensor_bytes(g, src_t, rand(rng, 96, 5, 2)))]
        # bf16 output read back as the top halves of fp32 words
        yield Case("CPY", f"{src_t}->{dst_t},ne=[96,5,2]", EXACT, convert,
                   out_dtype={"f16": np.float16, "f32": np.float32, "bf16": "bf16"}[dst_t])


def rope_cases():
    """NORMAL and NEOX, all or half of the dims, near and far positions (Gemma 3's head size 256)."""
    rope = lambda g: g.op("rope_ext", C.c_void_p, C.c_void_p, C.c_void_p, C.c_int, C.c_int, C.c_int,  # noqa: E731
                          F, F, F, F, F, F)
    for mode, name in ((0, "normal"), (2, "neox")):
        for ne, n_dims, base, max_pos in (((64, 4, 5, 1), 64, 10000.0, 128), ((128, 3, 4, 1), 64, 10000.0, 128),
                                          ((256, 4, 9, 1), 256, 1000000.0, 8192)):
            def build(g, w, a, rng, ne=ne, n_dims=n_dims, base=base, max_pos=max_pos, mode=mode):
                x, pos = a.tensor("f32", *ne), a.tensor("i32", ne[2])
                positions = rng.integers(0, max_pos, size=ne[2]).astype(np.int32)
                return rope(g)(a.ctx, x, pos, None, n_dims, mode, 4096, base, 1.0, 0.0, 1.0, 32.0, 1.0), [
                    (x, tensor_bytes(g, "f32", rand(rng, *ne))), (pos, tensor_bytes(g, "i32", positions))]
            tol = MATH if max_pos > 128 else EXACT  # far positions: fp32 angles differ by ~|angle| * 6e-8
            yield Case("ROPE", f"ne={dims(ne)},n_dims={n_dims},mode={name},freq_base={base:g},pos<{max_pos}", tol, build)
    # The multi-position modes (four positions per token, the sections in op_params 11-14) and the
    # rotation window's offset (op_params 15, ggml_rope_set_offset).
    multi = lambda g: g.op("rope_multi", C.c_void_p, C.c_void_p, C.c_void_p, C.c_int, C.c_int * 4, C.c_int,  # noqa: E731
                           C.c_int, F, F, F, F, F, F)
    for mode, name, ne, n_dims, sections, n_offs in ((8, "mrope", (128, 4, 3, 1), 128, (16, 24, 24, 0), 0),
                                                     (40, "imrope", (128, 4, 3, 1), 128, (24, 20, 20, 0), 0),
                                                     (24, "vision", (80, 4, 3, 1), 40, (20, 20, 0, 0), 0),
                                                     (2, "neox", (128, 4, 3, 1), 32, None, 32),
                                                     (40, "imrope", (128, 4, 3, 1), 24, (8, 8, 8, 0), 2)):
        def build(g, w, a, rng, ne=ne, n_dims=n_dims, sections=sections, n_offs=n_offs, mode=mode):
            n_pos = ne[2] * (4 if sections else 1)
            x, pos = a.tensor("f32", *ne), a.tensor("i32", n_pos)
            positions = rng.integers(0, 128, size=n_pos).astype(np.int32)
            if sections:
                r = multi(g)(a.ctx, x, pos, None, n_dims, (C.c_int * 4)(*sections), mode, 4096, 10000.0, 1.0, 0.0,
                             1.0, 32.0, 1.0)
            else:
                r = rope(g)(a.ctx, x, pos, None, n_dims, mode, 4096, 10000.0, 1.0, 0.0, 1.0, 32.0, 1.0)
            if n_offs:
                r = g.op("rope_set_offset", C.c_int)(r, n_offs)  # (tensor, n_offs): no context
            return r, [(x, tensor_bytes(g, "f32", rand(rng, *ne))), (pos, tensor_bytes(g, "i32", positions))]
        label = f"ne={dims(ne)},n_dims={n_dims},mode={name}" + (f",sections={'/'.join(map(str, sections))}" if sections else "")
        yield Case("ROPE", label + (f",n_offs={n_offs}" if n_offs else ""), EXACT, build)


def im2col_cases():
    """A vision encoder's patch embedding (2-D, F16 rows), a padded 3x3 convolution (2-D, F32) and a
    dilated, strided 1-D one."""
    im2col = lambda g: g.op("im2col", C.c_void_p, C.c_void_p, *([C.c_int] * 6), C.c_bool, C.c_int)  # noqa: E731
    for image, kernel, s, p, d, is_2d, out in (((28, 28, 3, 1), (14, 14, 3, 8), 14, 0, 1, True, "f16"),
                                               ((10, 10, 3, 2), (3, 3, 3, 4), 1, 1, 1, True, "f32"),
                                               ((40, 6, 2, 1), (3, 6, 5, 1), 2, 2, 3, False, "f32")):
        def build(g, w, a, rng, image=image, kernel=kernel, s=s, p=p, d=d, is_2d=is_2d, out=out):
            k, x = a.tensor("f16", *kernel), a.tensor("f32", *image)
            dst_type = {"f32": 0, "f16": 1}[out]
            r = im2col(g)(a.ctx, k, x, s, s if is_2d else 0, p, p if is_2d else 0, d, d if is_2d else 0, is_2d, dst_type)
            return r, [(x, tensor_bytes(g, "f32", rand(rng, *image)))]
        yield Case("IM2COL", f"image={dims(image)},kernel={dims(kernel)},s={s},p={p},d={d},{'2d' if is_2d else '1d'},{out}",
                   EXACT, build, out_dtype={"f16": np.float16, "f32": np.float32}[out])


def set_rows_cases():
    """The KV cache's writes: F32 rows into F16/F32 rows named by I64/I32 ids, the other rows kept;
    one decode token and a micro-batch into Gemma 3's 256-wide rows, ids broadcast over heads; a
    Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and IQ4_NL caches (their bytes compared: ggml's quantizers and the NPU's
    must agree bit for bit)."""
    for dst_t, id_t, ne, n_rows, id_ne12 in (("f16", "i64", (256, 64, 1, 1), 1, 1), ("f16", "i64", (256, 64, 1, 1), 40, 1),
                                             ("f32", "i32", (33, 10, 2, 1), 4, 1), ("f16", "i32", (80, 10, 2, 1), 4, 2),
                                             ("q8_0", "i64", (256, 64, 1, 1), 40, 1), ("q4_0", "i64", (256, 64, 1, 1), 40, 1),
                                             ("q4_1", "i64", (256, 64, 1, 1), 40, 1), ("q5_0", "i32", (256, 64, 1, 1), 40, 1),
                                             ("q5_1", "i64", (256, 64, 1, 1), 40, 1), ("iq4_nl", "i64", (256, 64, 1, 1), 40, 1)):
        def build(g, w, a, rng, dst_t=dst_t, id_t=id_t, ne=ne, n_rows=n_rows, id_ne12=id_ne12):
            dst = a.tensor(dst_t, *ne)
            src_ne = (ne[0], n_rows, ne[2], ne[3])
            src, ids = a.tensor("f32", *src_ne), a.tensor(id_t, n_rows, id_ne12)
            rows = np.stack([rng.permutation(ne[1])[:n_rows] for _ in range(id_ne12)])
            return g.op("set_rows", C.c_void_p, C.c_void_p, C.c_void_p)(a.ctx, dst, src, ids), [
                (dst, tensor_bytes(g, dst_t, rand(rng, *ne))), (src, tensor_bytes(g, "f32", rand(rng, *src_ne))),
                (ids, tensor_bytes(g, id_t, rows))]
        yield Case("SET_ROWS", f"type={dst_t},type_ids={id_t},ne={dims(ne)},rows={n_rows},ne_ids=[{n_rows},{id_ne12}]",
                   EXACT, build, out_dtype=np.float16 if dst_t == "f16" else np.float32 if dst_t == "f32" else np.uint8)


def get_rows_cases():
    """Rows of activations picked by id (the output rows of a prompt's last tokens), F32 and F16."""
    for src_t, ne, n_ids in (("f32", (640, 9, 1, 1), 3), ("f16", (256, 7, 2, 1), 4), ("f32", (33, 10, 1, 1), 10)):
        def build(g, w, a, rng, src_t=src_t, ne=ne, n_ids=n_ids):
            src, ids = a.tensor(src_t, *ne), a.tensor("i32", n_ids, ne[2])
            rows = rng.integers(0, ne[1], size=(ne[2], n_ids)).astype(np.int32)
            return g.op("get_rows", C.c_void_p, C.c_void_p)(a.ctx, src, ids), [
                (src, tensor_bytes(g, src_t, rand(rng, *ne))), (ids, tensor_bytes(g, "i32", rows))]
        yield Case("GET_ROWS", f"type={src_t},ne={dims(ne)},n_ids={n_ids}", EXACT, build)


def flash_attn_cases():
    """Decode and a small prefill, GQA, Gemma 3's head size 256, an F16 mask with -inf entries padded
    to 64 rows. ggml's CPU rounds Q to F16 for its dot products (hexnpu keeps fp32): the matmul bound."""
    for d, n_q, n_kv, n_head, n_head_kv, max_bias, softcap in ((64, 1, 32, 4, 4, 0.0, 0.0), (256, 1, 100, 4, 1, 0.0, 0.0),
                                                              (128, 5, 70, 8, 2, 0.0, 0.0), (64, 3, 50, 8, 4, 8.0, 20.0)):
        def build(g, w, a, rng, d=d, n_q=n_q, n_kv=n_kv, n_head=n_head, n_head_kv=n_head_kv, max_bias=max_bias,
                  softcap=softcap):
            q, k, v = a.tensor("f32", d, n_q, n_head), a.tensor("f16", d, n_kv, n_head_kv), a.tensor("f16", d, n_kv, n_head_kv)
            m = a.tensor("f16", n_kv, 64)
            mask = np.where(rng.uniform(size=(64, n_kv)) < 0.2, -np.inf, rand(rng, n_kv, 64)).astype(np.float32)
            mask[:, 0] = 0.0  # every query sees at least one key
            fa = g.op("flash_attn_ext", C.c_void_p, C.c_void_p, C.c_void_p, C.c_void_p, F, F, F)
            return fa(a.ctx, q, k, v, m, 1.0 / np.sqrt(d), max_bias, softcap), [
                (q, tensor_bytes(g, "f32", rand(rng, d, n_q, n_head))), (k, tensor_bytes(g, "f16", rand(rng, d, n_kv, n_head_kv))),
                (v, tensor_bytes(g, "f16", rand(rng, d, n_kv, n_head_kv))), (m, tensor_bytes(g, "f16", mask))]
        yield Case("FLASH_ATTN_EXT", f"d={d},n_q={n_q},n_kv={n_kv},n_head={n_head},n_head_kv={n_head_kv},mask=f16"
                   + (f",max_bias={max_bias},softcap={softcap}" if max_bias or softcap else ""), MATMUL, build)


WEIGHT_TYPES = ["f32", "f16", "bf16", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "iq4_nl", "mxfp4", "q1_0", "q2_0",
                "q2_K", "q3_K", "q4_K", "q5_K", "q6_K"]


def matmul_cases():
    for wt in WEIGHT_TYPES:
        for m, n, k in ((64, 1, 256), (96, 5, 512), (33, 17, 256)):
            def build(g, w, a, rng, wt=wt, m=m, n=n, k=k):
                wt_t, x = w.tensor(wt, k, m), a.tensor("f32", k, n)
                return g.op("mul_mat", C.c_void_p, C.c_void_p)(a.ctx, wt_t, x), [
                    (wt_t, tensor_bytes(g, wt, rand(rng, k, m))), (x, tensor_bytes(g, "f32", rand(rng, k, n)))]
            yield Case("MUL_MAT", f"type_a={wt},m={m},n={n},k={k}", MATMUL, build, uses_weights=True)
    for wt in ("q4_0", "q8_0", "q4_K", "f16"):
        def build(g, w, a, rng, wt=wt):
            k, m, n_expert, n_used, n_tokens = 256, 64, 4, 2, 3
            experts = w.tensor(wt, k, m, n_expert)
            x = a.tensor("f32", k, n_used, n_tokens)
            ids = a.tensor("i32", n_used, n_tokens)
            choice = np.array([[0, 3], [2, 1], [3, 2]], dtype=np.int32)
            return g.op("mul_mat_id", C.c_void_p, C.c_void_p, C.c_void_p)(a.ctx, experts, x, ids), [
                (experts, tensor_bytes(g, wt, rand(rng, k, m, n_expert))),
                (x, tensor_bytes(g, "f32", rand(rng, k, n_used, n_tokens))), (ids, tensor_bytes(g, "i32", choice))]
        yield Case("MUL_MAT_ID", f"type_a={wt},experts=4,used=2,tokens=3", MATMUL, build, uses_weights=True)


def linear_attn_cases():
    """Triangular matrices and linear attention: TRI's four triangles, DIAG, a chunk-sized SOLVE_TRI
    (the unit-diagonal system of the chunked delta net), LFM2's and Qwen3.5's short convolutions, and
    the gated delta net at Qwen3.5's head size, decode and a 40-token prompt (q, k L2-normalised)."""
    P = C.c_void_p
    for tri_type in range(4):
        def build(g, w, a, rng, tri_type=tri_type):
            x = a.tensor("f32", 33, 33, 2)
            return g.op("tri", P, C.c_int)(a.ctx, x, tri_type), [(x, tensor_bytes(g, "f32", rand(rng, 33, 33, 2)))]
        yield Case("TRI", f"ne=[33,33,2],type={tri_type}", EXACT, build)
    def diag(g, w, a, rng):
        x = a.tensor("f32", 40, 1, 3)
        return g.op("diag", P)(a.ctx, x), [(x, tensor_bytes(g, "f32", rand(rng, 40, 1, 3)))]
    yield Case("DIAG", "ne=[40,1,3]", EXACT, diag)
    def solve(g, w, a, rng):
        A, B = a.tensor("f32", 64, 64, 2), a.tensor("f32", 48, 64, 2)
        m = np.tril(rand(rng, 64, 64, 2, lo=-0.1, hi=0.1), -1) + np.eye(64, dtype=np.float32)
        return g.op("solve_tri", P, P, C.c_bool, C.c_bool, C.c_bool)(a.ctx, A, B, True, True, False), [
            (A, tensor_bytes(g, "f32", m)), (B, tensor_bytes(g, "f32", rand(rng, 48, 64, 2)))]
    yield Case("SOLVE_TRI", "ne_a=[64,64,2],ne_b=[48,64,2],a=unit+tril", EXACT, solve)
    for d_conv, d_inner, n_t, n_s in ((3, 2048, 1, 2), (4, 1000, 37, 1)):
        def build(g, w, a, rng, d_conv=d_conv, d_inner=d_inner, n_t=n_t, n_s=n_s):
            sx, c = a.tensor("f32", d_conv - 1 + n_t, d_inner, n_s), a.tensor("f32", d_conv, d_inner)
            return g.op("ssm_conv", P, P)(a.ctx, sx, c), [
                (sx, tensor_bytes(g, "f32", rand(rng, d_conv - 1 + n_t, d_inner, n_s))),
                (c, tensor_bytes(g, "f32", rand(rng, d_conv, d_inner)))]
        yield Case("SSM_CONV", f"d_conv={d_conv},d_inner={d_inner},n_t={n_t},n_s={n_s}", EXACT, build)
    for S, h_k, h_v, T, n_seqs in ((128, 4, 8, 1, 2), (128, 2, 2, 40, 1)):
        def build(g, w, a, rng, S=S, h_k=h_k, h_v=h_v, T=T, n_seqs=n_seqs):
            def unit_rows(*ne):  # q and k as Qwen3.5 gives them: L2-normalised rows
                x = rand(rng, *ne)
                return x / np.linalg.norm(x, axis=-1, keepdims=True)
            q, k = a.tensor("f32", S, h_k, T, n_seqs), a.tensor("f32", S, h_k, T, n_seqs)
            v, gate = a.tensor("f32", S, h_v, T, n_seqs), a.tensor("f32", 1, h_v, T, n_seqs)
            beta, state = a.tensor("f32", 1, h_v, T, n_seqs), a.tensor("f32", S, S, h_v, n_seqs)
            r = g.op("gated_delta_net", P, P, P, P, P, P, I64)(a.ctx, q, k, v, gate, beta, state, 1)
            return r, [(q, tensor_bytes(g, "f32", unit_rows(S, h_k, T, n_seqs))),
                       (k, tensor_bytes(g, "f32", unit_rows(S, h_k, T, n_seqs))),
                       (v, tensor_bytes(g, "f32", rand(rng, S, h_v, T, n_seqs, lo=-0.3, hi=5.0))),
                       (gate, tensor_bytes(g, "f32", rand(rng, 1, h_v, T, n_seqs, lo=-2.0, hi=-0.01))),
                       (beta, tensor_bytes(g, "f32", rand(rng, 1, h_v, T, n_seqs, lo=0.0, hi=1.0))),
                       (state, tensor_bytes(g, "f32", rand(rng, S, S, h_v, n_seqs)))]
        # fp32 sums over the keys in another order than ggml's SIMD lanes: the math bound.
        yield Case("GATED_DELTA_NET", f"S={S},h_k={h_k},h_v={h_v},T={T},n_seqs={n_seqs}", MATH, build)


def all_cases():
    for family in (binary_cases, unary_cases, reduce_cases, norm_cases, glu_cases, softmax_cases, copy_cases, rope_cases, im2col_cases, set_rows_cases,
                   get_rows_cases, layout_cases, sort_cases, flash_attn_cases, matmul_cases, linear_attn_cases):
        yield from family()


class Target:
    def __init__(self, name, backend, dev, weight_buft):
        self.name, self.backend, self.dev, self.weight_buft = name, backend, dev, weight_buft


def run(g, case, target, seed):
    """(output as float32 array, supported) of the case on target; None output when refused."""
    rng = np.random.default_rng(seed)
    w, a = Context(g), Context(g)
    try:
        out, inputs = case.build(g, w, a, rng)
        graph = g.new_graph(a.ctx)
        g.build_forward(graph, out)
        if target.dev is not None and not g.dev_supports_op(target.dev, out):
            return None
        if case.uses_weights:
            w.allocate(buft=target.weight_buft)
        a.allocate(backend=target.backend)
        for t, data in inputs:
            g.tensor_set(t, data, 0, len(data))
        status = g.graph_compute(target.backend, graph)
        if status != 0:
            raise RuntimeError(f"{target.name}: ggml_backend_graph_compute returned {status}")
        size = g.nbytes(out)
        buf = C.create_string_buffer(size)
        g.tensor_get(out, buf, 0, size)
        if case.out_dtype == "bf16":
            half = np.frombuffer(buf.raw, dtype=np.uint16).astype(np.uint32) << 16
            return half.view(np.float32).astype(np.float64)
        return np.frombuffer(buf.raw, dtype=case.out_dtype).astype(np.float64)
    finally:
        a.close()
        w.close()


def nmse(got, want):
    return float(np.sum((got - want) ** 2) / max(np.sum(want ** 2), 1e-300))


def extra_bufts(g, reg, dev):
    addr = g.reg_proc(reg, b"ggml_backend_dev_get_extra_bufts")
    if not addr:
        return []
    fn = C.CFUNCTYPE(C.POINTER(C.c_void_p), C.c_void_p)(addr)
    arr, out = fn(dev), []
    while arr[len(out)]:
        out.append(arr[len(out)])
    return out


def conformance(plugin, only=None):
    """Runs every case; returns (rows, failures). A row: (op, desc, {target: nmse or None}, tol, ok)."""
    g = Ggml()
    reg = g.load_plugin(plugin)
    dev = g.dev_by_name(b"HTP0")
    if not dev:
        raise RuntimeError("the plugin registered no device HTP0")
    repack = [b for b in extra_bufts(g, reg, dev) if g.buft_name(b).endswith(b"-REPACK")]
    htp_backend = g.dev_init(dev, None)
    cpu_backend = g.init_by_type(DEV_CPU, None)
    cpu_dev = g.dev_by_name(b"CPU")
    cpu = Target("CPU", cpu_backend, None, g.dev_buft(cpu_dev))
    targets = [Target("HTP0", htp_backend, dev, g.dev_buft(dev))]
    targets += [Target("HTP0-REPACK", htp_backend, dev, b) for b in repack]
    rows, failures = [], 0
    for seed, case in enumerate(all_cases()):
        label = f"{case.op}({case.desc})"
        if only and only not in label:
            continue
        canon = (lambda v: np.sort(v.reshape(-1, case.row_set), axis=1).ravel()) if case.row_set else (lambda v: v)
        want = canon(run(g, case, cpu, seed))
        results, ok = {}, True
        for t in targets if case.uses_weights else targets[:1]:
            got = run(g, case, t, seed)
            got = None if got is None else canon(got)
            results[t.name] = None if got is None else nmse(got, want)
            ok = ok and got is not None and results[t.name] <= case.tol
        failures += not ok
        rows.append((case.op, case.desc, results, case.tol, ok))
    g.backend_free(htp_backend)
    g.backend_free(cpu_backend)
    return rows, failures


def markdown(rows, failures):
    def cell(v):
        return "refused" if v is None else f"{v:.2e}"
    lines = [
        "# hexnpu's NPU ops through the real ggml",
        "",
        "Generated by `python3 tests/ggml/ggml_conformance.py` (llama-cpp-python 0.3.36's ggml, GGML backend API 2):",
        "each case is one ggml graph built with ggml's own functions, run on device HTP0 through",
        "`build/lib/libggml-hexagon.so` (weights flat in an HTP0 buffer and tiled in HTP0-REPACK) and on",
        "ggml's CPU backend; the columns are NMSE against the CPU backend (thresholds in the script's",
        "docstring). Ops the NPU does not run stay on ggml's CPU backend in a model and are not listed.",
        "llama.cpp's own `test-backend-ops` on HTP0, the wider judge: `docs/ggml-test-backend-ops.md`.",
        "",
        f"{len(rows)} cases, {failures} failed.",
        "",
        "| op | case | HTP0 | HTP0-REPACK | max NMSE | result |",
        "|---|---|---|---|---|---|",
    ]
    for op, desc, res, tol, ok in rows:
        repack = cell(res["HTP0-REPACK"]) if "HTP0-REPACK" in res else "-"
        lines.append(f"| {op} | `{desc}` | {cell(res['HTP0'])} | {repack} | {tol:g} | {'ok' if ok else 'FAIL'} |")
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--plugin", default=os.environ.get("HEXNPU_GGML_PLUGIN", ROOT / "build/lib/libggml-hexagon.so"))
    ap.add_argument("-o", "--output", default=ROOT / "docs/ggml-conformance.md")
    ap.add_argument("-k", help="only cases whose label contains this")
    args = ap.parse_args()
    rows, failures = conformance(args.plugin, args.k)
    text = markdown(rows, failures)
    Path(args.output).write_text(text)
    for op, desc, res, tol, ok in rows:
        if not ok:
            print(f"FAIL {op}({desc}): {res} > {tol:g}")
    print(f"ggml-conformance: {len(rows)} cases, {failures} failed -> {args.output}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
