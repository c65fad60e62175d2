#!/usr/bin/env python3
"""Writes the malformed-GGUF corpus: one small file per failure class the reader must reject,
and expected.txt with one line per file: `<file> <substring the error message must contain>`.

The bytes are assembled here by hand from the GGUF layout (shared/design/formats.md §2), not by
hexnpu's writer, so the corpus is an independent check of the reader. Byte offsets in the expected
messages are computed from the same layout. Run it from anywhere; it writes next to itself and
removes .gguf files it no longer generates, except fuzz-*.gguf (inputs found by the fuzzer,
committed by hand and listed in fuzz-expected.txt).
"""

import pathlib
import struct

HERE = pathlib.Path(__file__).resolve().parent

# GGUF value type codes.
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)

# GGML type ids with their (block size, bytes per block), formats.md §1.1.
F32, F16, Q4_0, F64 = 0, 1, 2, 28
TYPE_LAYOUT = {F32: (1, 4), F16: (1, 2), Q4_0: (32, 18), F64: (1, 8)}


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v % 2**64)  # negative values are written as their two's complement


def string(b):
    return u64(len(b)) + b


def kv(key, type_code, payload):
    return string(key) + u32(type_code) + payload


def kv_str(key, text):
    return kv(key, STRING, string(text))


def kv_u32(key, v):
    return kv(key, UINT32, u32(v))


def kv_array(key, elem_type, count, payload):
    return kv(key, ARRAY, u32(elem_type) + u64(count) + payload)


def nbytes(type_id, dims):
    if type_id not in TYPE_LAYOUT:  # unknown and retired types: the reader rejects them first
        return 0
    blck, size = TYPE_LAYOUT[type_id]
    n = dims[0] // blck * size
    for d in dims[1:]:
        n *= d
    return n


def align_up(n, a):
    return (n + a - 1) // a * a


class Tensor:
    def __init__(self, name, dims, type_id, offset=None):
        self.name, self.dims, self.type_id, self.offset = name, dims, type_id, offset

    def info(self):
        return (string(self.name) + u32(len(self.dims)) + b"".join(u64(d) for d in self.dims) +
                u32(self.type_id) + u64(self.offset))


def header(tensor_count, kv_count):
    return b"GGUF" + u32(3) + u64(tensor_count) + u64(kv_count)


def default_kvs():
    # A long first value, so that a file cut anywhere after it still has room for the smallest
    # possible records of every count: the cut is then reported as truncation, not as a count.
    return [
        kv_str(b"general.description", b"x" * 200),
        kv_str(b"general.architecture", b"llama"),
        kv_u32(b"general.quantization_version", 2),
        kv_array(b"tokenizer.ggml.tokens", STRING, 3,
                 string(b"<|begin_of_text|>") + string(b"a") + string(b"\xc3\xa9")),
        kv(b"tokenizer.ggml.add_bos_token", BOOL, b"\x01"),
    ]


def default_tensors():
    return [Tensor(b"token_embd.weight", [8, 2], F32), Tensor(b"blk.0.attn_q.weight", [32, 2], Q4_0)]


class Layout:
    """A GGUF file plus the offsets of its parts: kv[i], info[i], data (the data section)."""

    def __init__(self, kvs=None, tensors=None, *, magic=b"GGUF", version=3, tensor_count=None,
                 kv_count=None, alignment=32, data=None):
        kvs = default_kvs() if kvs is None else kvs
        tensors = default_tensors() if tensors is None else tensors
        offset = 0
        for t in tensors:  # GGML's packing: each offset is the running sum of aligned sizes
            if t.offset is None:
                t.offset = offset
            offset = align_up(t.offset + nbytes(t.type_id, t.dims), alignment)
        body = bytearray(magic + u32(version))
        body += u64(len(tensors) if tensor_count is None else tensor_count)
        body += u64(len(kvs) if kv_count is None else kv_count)
        self.kv = []
        for k in kvs:
            self.kv.append(len(body))
            body += k
        self.info = []
        for t in tensors:
            self.info.append(len(body))
            body += t.info()
        self.infos_end = len(body)
        self.data = align_up(len(body), alignment)
        body += bytes(self.data - len(body))
        if data is None:
            data = bytes(range(256)) * (offset // 256 + 1)
            data = data[:offset]
        self.bytes = bytes(body) + data


CASES = {}


def case(name, content, expected):
    assert name not in CASES, name
    CASES[name] = (content, expected)


def build():
    base = Layout()
    b = base.bytes
    q = b"'blk.0.attn_q.weight'"
    q_at = base.info[1]

    # Header.
    case("empty", b"", "file is 0 bytes, shorter than the 24-byte GGUF header")
    case("shorter-than-header", b[:20], "file is 20 bytes, shorter than the 24-byte GGUF header")
    case("bad-magic", b"GGML" + b[4:], 'bad magic "GGML" at byte 0')
    case("bad-magic-short", b"\x7fELF", 'bad magic "\\x7fELF" at byte 0')
    case("version-0", Layout(version=0).bytes, "unsupported GGUF version 0 at byte 4")
    case("version-1", Layout(version=1).bytes, "unsupported GGUF version 1 at byte 4")
    case("version-4", Layout(version=4).bytes, "unsupported GGUF version 4 at byte 4")
    case("version-byte-swapped", Layout(version=0x03000000).bytes,
         "reads as 0x03000000, a byte-swapped 3: big-endian GGUF files are not supported")

    # Counts that cannot fit in the file.
    case("tensor-count-absurd", Layout(tensor_count=2**62).bytes, "tensor_count 4611686018427387904 at byte 8 cannot fit")
    case("tensor-count-max", Layout(tensor_count=2**64 - 1).bytes, "tensor_count 18446744073709551615 at byte 8 cannot fit")
    case("kv-count-absurd", Layout(kv_count=2**40).bytes, "metadata_kv_count 1099511627776 at byte 16 cannot fit")

    # Truncation inside each kind of item.
    kv1, kv3, kv4 = base.kv[1], base.kv[3], base.kv[4]
    case("truncated-in-kv-count", b[:22], "file is 22 bytes, shorter than the 24-byte GGUF header")
    case("truncated-in-key-length", b[:kv1 + 5],
         f"truncated at byte {kv1}: the key length of metadata entry #1 at byte {kv1} needs 8 bytes but only 5 remain")
    case("truncated-in-key", b[:kv1 + 8 + 3],
         f"truncated at byte {kv1 + 8}: the key of metadata entry #1 at byte {kv1} needs 20 bytes but only 3 remain")
    case("truncated-in-value-type", b[:kv1 + 8 + 20 + 2],
         f"truncated at byte {kv1 + 28}: the value type of key 'general.architecture' needs 4 bytes")
    case("truncated-in-string-length", b[:kv1 + 32 + 7],
         f"truncated at byte {kv1 + 32}: the string length of the value of key 'general.architecture' needs 8 bytes")
    case("truncated-in-string", b[:kv1 + 40 + 2],
         f"truncated at byte {kv1 + 40}: the value of key 'general.architecture' needs 5 bytes but only 2 remain")
    u32_value_at = base.kv[2] + 8 + len(b"general.quantization_version") + 4
    case("truncated-in-value", b[:u32_value_at + 3],
         f"truncated at byte {u32_value_at}: the value of key 'general.quantization_version' needs 4 bytes")
    tokens_at = kv3 + 8 + len(b"tokenizer.ggml.tokens") + 4
    case("truncated-in-array-header", b[:tokens_at + 4 + 6],
         f"truncated at byte {tokens_at + 4}: the element count of array 'tokenizer.ggml.tokens' needs 8 bytes")
    second_token_at = tokens_at + 12 + 8 + len(b"<|begin_of_text|>")
    case("truncated-in-array-element", b[:second_token_at + 8],
         f"truncated at byte {second_token_at + 8}: element #1 of array 'tokenizer.ggml.tokens' needs 1 byte but only 0 remain")
    bool_at = kv4 + 8 + len(b"tokenizer.ggml.add_bos_token") + 4
    case("truncated-before-bool", b[:bool_at],
         f"truncated at byte {bool_at}: the value of key 'tokenizer.ggml.add_bos_token' needs 1 byte but only 0 remain")
    ti0 = base.info[0]
    case("truncated-in-tensor-name", b[:ti0 + 8 + 4],
         f"truncated at byte {ti0 + 8}: the name of tensor #0 (info at byte {ti0}) needs 17 bytes but only 4 remain")
    case("truncated-in-tensor-dims", b[:q_at + 8 + 19 + 4 + 8 + 1],
         f"truncated at byte {q_at + 8 + 19 + 4 + 8}: ne[1] of tensor {q.decode()} (info at byte {q_at}) needs 8 bytes")
    case("truncated-in-tensor-type", b[:q_at + 8 + 19 + 4 + 16 + 2],
         f"the type of tensor {q.decode()} (info at byte {q_at}) needs 4 bytes but only 2 remain")
    case("truncated-in-tensor-offset", b[:base.infos_end - 1],
         f"the data offset of tensor {q.decode()} (info at byte {q_at}) needs 8 bytes but only 7 remain")
    case("truncated-in-padding", b[:base.infos_end + 1],
         f"tensor 'token_embd.weight' (info at byte {ti0}): data [{base.data}, {base.data + 64}) extends past the end of the file ({base.infos_end + 1} bytes)")
    case("truncated-in-data", b[:-40],
         f"tensor {q.decode()} (info at byte {q_at}): data [{base.data + 64}, {base.data + 100}) extends past the end of the file ({len(b) - 40} bytes)")

    # Strings and keys.
    case("string-length-huge", Layout(kvs=[kv(b"general.name", STRING, u64(2**63) + b"x")]).bytes,
         "the value of key 'general.name' needs 9223372036854775808 bytes but only")
    case("empty-key", Layout(kvs=[kv(b"", UINT32, u32(1))]).bytes, "metadata entry #0 at byte 24: empty key")
    case("key-too-long", Layout(kvs=[u64(65536) + b"k" * 40]).bytes,
         "metadata entry #0 at byte 24: key length 65536 exceeds 65535")
    dup = Layout(kvs=[kv_u32(b"a.b", 1), kv_str(b"c", b"x"), kv_u32(b"a.b", 2)])
    case("duplicate-key", dup.bytes, f"key 'a.b' at byte {dup.kv[2]}: duplicate key (first at byte 24)")
    case("key-with-control-bytes", Layout(kvs=[kv(b"a\nb'", 13, b"")]).bytes,
         "key 'a\\nb\\'' at byte 36: unknown value type 13")

    # Values.
    case("unknown-value-type", Layout(kvs=[kv(b"k", 13, u32(0))]).bytes, "key 'k' at byte 33: unknown value type 13")
    case("unknown-value-type-max", Layout(kvs=[kv(b"k", 0xFFFFFFFF, u32(0))]).bytes,
         "key 'k' at byte 33: unknown value type 4294967295")
    case("unknown-array-element-type", Layout(kvs=[kv_array(b"k", 99, 0, b"")]).bytes,
         "key 'k' at byte 37: unknown array element type 99")
    case("bool-not-0-or-1", Layout(kvs=[kv(b"k", BOOL, b"\x02")]).bytes, "key 'k' at byte 37: BOOL value is 2, not 0 or 1")
    case("bool-array-element-not-0-or-1", Layout(kvs=[kv_array(b"k", BOOL, 3, b"\x01\x00\xff")]).bytes,
         "key 'k' at byte 51: BOOL element #2 is 255, not 0 or 1")
    case("nested-array", Layout(kvs=[kv_array(b"k", ARRAY, 1, u32(UINT8) + u64(1) + b"\x00")]).bytes,
         "key 'k' at byte 37: nested arrays (array of ARRAY) are not supported")
    case("array-count-absurd", Layout(kvs=[kv_array(b"k", UINT32, 2**61, u32(7))]).bytes,
         "truncated at byte 49: the 2305843009213693952 uint32 elements of array 'k' (2305843009213693952 x 4 bytes) cannot fit")
    case("string-array-count-absurd", Layout(kvs=[kv_array(b"k", STRING, 2**40, string(b"x"))]).bytes,
         "the 1099511627776 string elements of array 'k' (1099511627776 x 8 bytes) cannot fit")
    case("array-truncated", Layout(kvs=[kv_array(b"k", UINT16, 5, u16s := struct.pack("<4H", 1, 2, 3, 4))],
                                   tensors=[]).bytes[:49 + len(u16s)],
         "the 5 uint16 elements of array 'k' (5 x 2 bytes) cannot fit in the 8 bytes left")

    # Alignment.
    case("alignment-not-u32", Layout(kvs=[kv(b"general.alignment", UINT64, u64(32))]).bytes,
         "key 'general.alignment' at byte 53: must be a uint32, not a uint64")
    case("alignment-string", Layout(kvs=[kv_str(b"general.alignment", b"32")]).bytes,
         "key 'general.alignment' at byte 53: must be a uint32, not a string")
    case("alignment-zero", Layout(kvs=[kv_u32(b"general.alignment", 0)]).bytes,
         "key 'general.alignment' at byte 53: 0 is not a non-zero power of two")
    case("alignment-not-power-of-two", Layout(kvs=[kv_u32(b"general.alignment", 48)]).bytes,
         "key 'general.alignment' at byte 53: 48 is not a non-zero power of two")
    case("alignment-huge", Layout(kvs=[kv_u32(b"general.alignment", 1 << 30)]).bytes,
         "key 'general.alignment' at byte 53: 1073741824 exceeds the largest alignment accepted (1048576)")
    aligned64 = Layout(kvs=[kv_u32(b"general.alignment", 64)],
                       tensors=[Tensor(b"a", [8], F32), Tensor(b"b", [8], F32, offset=32)], alignment=64)
    case("offset-misaligned-for-custom-alignment", aligned64.bytes,
         f"tensor 'b' (info at byte {aligned64.info[1]}): offset 32 is not a multiple of the alignment 64")

    # Tensor infos.
    def one_tensor(t, **kw):
        lay = Layout(kvs=[], tensors=[t], **kw)
        return lay.bytes, lay.info[0]

    content, at = one_tensor(Tensor(b"", [8], F32))
    case("tensor-name-empty", content, f"tensor #0 (info at byte {at}): empty name")
    content, at = one_tensor(Tensor(b"n" * 64, [8], F32))
    case("tensor-name-64-bytes", content, f"tensor #0 (info at byte {at}): name is 64 bytes; names must be shorter than 64")
    content, at = one_tensor(Tensor(b"n" * 65, [8], F32))
    case("tensor-name-65-bytes", content, f"tensor #0 (info at byte {at}): name is 65 bytes")
    case("tensor-name-length-huge", header(1, 0) + u64(2**63) + bytes(40),
         "tensor #0 (info at byte 24): name is 9223372036854775808 bytes")
    dup_t = Layout(kvs=[], tensors=[Tensor(b"w", [8], F32), Tensor(b"x", [8], F32), Tensor(b"w", [8], F32)])
    case("tensor-name-duplicate", dup_t.bytes,
         f"tensor 'w' (info at byte {dup_t.info[2]}): duplicate name (first at byte {dup_t.info[0]})")
    for n_dims in (0, 5):
        content = header(1, 0) + string(b"t") + u32(n_dims) + bytes(48)
        case(f"n-dims-{n_dims}", content, f"tensor 't' (info at byte 24): n_dims {n_dims} is not in 1..4")
    content, at = one_tensor(Tensor(b"t", [8, 0], F32))
    case("dim-zero", content, f"tensor 't' (info at byte {at}): ne[1]=0 is not positive")
    content, at = one_tensor(Tensor(b"t", [-32, 1], F32), data=b"")
    case("dim-negative", content, f"tensor 't' (info at byte {at}): ne[0]=-32 is not positive")
    content, at = one_tensor(Tensor(b"t", [8, 1, 1, -(2**63)], F32), data=b"")
    case("dim-int64-min", content, f"tensor 't' (info at byte {at}): ne[3]=-9223372036854775808 is not positive")
    content, at = one_tensor(Tensor(b"t", [2**32, 2**31], F32, offset=0), data=b"")
    case("element-count-overflow", content,
         f"tensor 't' (info at byte {at}): element count of shape [4294967296, 2147483648] overflows int64")
    content, at = one_tensor(Tensor(b"t", [2**62], F64, offset=0), data=b"")
    case("byte-size-overflow", content,
         f"tensor 't' (info at byte {at}): byte size of f64 shape [4611686018427387904] overflows uint64")
    content, at = one_tensor(Tensor(b"t", [2**61, 2], F32, offset=0), data=b"")
    case("byte-size-overflow-2d", content, "byte size of f32 shape [2305843009213693952, 2] overflows uint64")
    for type_id, label in ((43, "unknown-tensor-type"), (0xFFFFFFFF, "unknown-tensor-type-max")):
        content, at = one_tensor(Tensor(b"t", [8], type_id, offset=0), data=b"")
        case(label, content, f"tensor 't' (info at byte {at}): unknown type id {type_id}")
    for type_id, type_name in ((4, "q4_2"), (31, "q4_0_4_4"), (38, "iq4_nl_8_8")):
        content, at = one_tensor(Tensor(b"t", [8], type_id, offset=0), data=b"")
        case(f"retired-tensor-type-{type_id}", content,
             f"tensor 't' (info at byte {at}): {type_name} (id {type_id}) is a retired type")
    content, at = one_tensor(Tensor(b"blk.0.attn_q.weight", [33, 2], Q4_0, offset=0), data=bytes(64))
    case("ne0-not-multiple-of-block", content,
         f"tensor 'blk.0.attn_q.weight' (info at byte {at}): ne[0]=33 is not a multiple of q4_0's block size 32")

    # Offsets and the data section.
    content, at = one_tensor(Tensor(b"t", [8], F32, offset=8), data=bytes(64))
    case("offset-misaligned", content, f"tensor 't' (info at byte {at}): offset 8 is not a multiple of the alignment 32")
    gap = Layout(kvs=[], tensors=[Tensor(b"a", [8], F32), Tensor(b"b", [8], F32, offset=64)])
    case("offset-gap", gap.bytes + bytes(64),
         f"tensor 'b' (info at byte {gap.info[1]}): offset 64 differs from 32, the running sum")
    overlap = Layout(kvs=[], tensors=[Tensor(b"a", [16], F32), Tensor(b"b", [8], F32, offset=32)])
    case("offset-overlap", overlap.bytes, f"tensor 'b' (info at byte {overlap.info[1]}): offset 32 differs from 64")
    reordered = Layout(kvs=[], tensors=[Tensor(b"a", [8], F32, offset=32), Tensor(b"b", [8], F32, offset=0)])
    case("offset-out-of-order", reordered.bytes + bytes(64),
         f"tensor 'a' (info at byte {reordered.info[0]}): offset 32 differs from 0")
    content, at = one_tensor(Tensor(b"t", [2**40], F32, offset=0), data=bytes(32))
    case("data-outside-file", content, f"tensor 't' (info at byte {at}): data [64, 4398046511168) extends past the end of the file (96 bytes)")
    content, at = one_tensor(Tensor(b"t", [2**61 - 1], F64, offset=0), data=b"")
    case("data-end-beyond-uint64", content,
         f"tensor 't' (info at byte {at}): data [64, {64 + 8 * (2**61 - 1)}) extends past the end of the file (64 bytes)")


def main():
    build()
    lines = []
    for name, (content, expected) in CASES.items():
        (HERE / f"{name}.gguf").write_bytes(content)
        lines.append(f"{name}.gguf {expected}")
    for stale in HERE.glob("*.gguf"):
        if stale.stem not in CASES and not stale.name.startswith("fuzz-"):
            stale.unlink()
    (HERE / "expected.txt").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
