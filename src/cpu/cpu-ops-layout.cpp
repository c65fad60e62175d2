// Data movement: CPY/CONT/DUP (element order kept, type converted through f32 when the types
// differ), CONCAT, REPEAT, PAD. Same-type copies move bytes, so they are exact for every value
// (NaN payloads included) and for quantized blocks.
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include <algorithm>
#include <cstring>
#include <vector>

namespace hexnpu::cpu {
namespace {

// Calls fn(row, first_i0, count) for the pieces of t's flat element range [first, first + n),
// one piece per row it touches (GGML's flat order: i0 fastest, then i1, i2, i3).
template <typename Fn> void for_each_row_piece(const ggml_tensor * t, int64_t first, int64_t n, Fn && fn) {
    while (n > 0) {
        const int64_t i0    = first % t->ne[0];
        const int64_t count = std::min(n, t->ne[0] - i0);
        fn(unravel_row(t, first / t->ne[0]), i0, count);
        first += count;
        n -= count;
    }
}

// ---- CPY / CONT / DUP ---------------------------------------------------------------------------

// Same type, element-addressable: bytes in flat order, whatever the two shapes and strides.
void copy_same_type(const compute_context & ctx, const ggml_tensor * src, ggml_tensor * dst) {
    const size_t  size = ggml_type_size(dst->type);
    const int64_t ne0  = dst->ne[0];
    const bool    same_shape = ggml_are_same_shape(src, dst);
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(ne0), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            uint8_t *       out = row_ptr(dst, ri);
            if (same_shape) {
                copy_elements(out, int64_t(dst->nb[0]), row_ptr(src, ri), int64_t(src->nb[0]), ne0, size);
                continue;
            }
            int64_t pos = 0;
            for_each_row_piece(src, r * ne0, ne0, [&](row_index si, int64_t i0, int64_t count) {
                copy_elements(out + pos * int64_t(dst->nb[0]), int64_t(dst->nb[0]),
                              row_ptr(src, si) + i0 * int64_t(src->nb[0]), int64_t(src->nb[0]), count, size);
                pos += count;
            });
        }
    });
}

// Same quantized type: whole blocks. Either the rows have the same length (row r of dst is row r
// of src) or both tensors are contiguous (then flat byte offsets coincide).
void copy_same_blocks(const compute_context & ctx, const ggml_tensor * src, ggml_tensor * dst) {
    const size_t row_bytes = ggml_row_size(dst->type, dst->ne[0]);
    const bool   same_ne0  = src->ne[0] == dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(int64_t(row_bytes), 65536), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const uint8_t * from = same_ne0 ? row_ptr(src, unravel_row(src, r))
                                            : static_cast<const uint8_t *>(src->data) + size_t(r) * row_bytes;
            std::memcpy(row_ptr(dst, unravel_row(dst, r)), from, row_bytes);
        }
    });
}

// Different types: each dst row gathered as f32 from src's flat order, then stored (rounded or
// quantized) in dst's type.
void copy_converting(const compute_context & ctx, const ggml_tensor * src, ggml_tensor * dst) {
    const int64_t ne0       = dst->ne[0];
    const bool    same_row_length = src->ne[0] == ne0;
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(ne0), [&](int64_t r0, int64_t r1) {
        std::vector<float> row(ne0);
        std::vector<float> src_row(same_row_length ? 0 : size_t(src->ne[0]));
        int64_t            cached = -1;  // flat index of the src row held in src_row
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri = unravel_row(dst, r);
            if (same_row_length) {
                load_row(src, unravel_row(src, r), row.data());
            } else {
                int64_t pos = 0;
                for_each_row_piece(src, r * ne0, ne0, [&](row_index si, int64_t i0, int64_t count) {
                    const int64_t flat = si.i1 + src->ne[1] * (si.i2 + src->ne[2] * si.i3);
                    if (flat != cached) {
                        load_row(src, si, src_row.data());
                        cached = flat;
                    }
                    std::copy_n(src_row.begin() + i0, count, row.begin() + pos);
                    pos += count;
                });
            }
            store_row(dst, ri, row.data());
        }
    });
}

bool supports_copy(const ggml_tensor * op) {
    const ggml_tensor * src = op->src[0];
    if (ggml_nelements(src) != ggml_nelements(op)) {
        return false;
    }
    if (src->type == op->type) {
        if (ggml_blck_size(op->type) == 1) {
            return true;
        }
        return ggml_is_contiguous_rows(src) && ggml_is_contiguous_rows(op) &&
               (src->ne[0] == op->ne[0] || (ggml_is_contiguous(src) && ggml_is_contiguous(op)));
    }
    return can_load_rows(src) && can_store_rows(op);
}

void compute_copy(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * src = dst->src[0];
    if (src->type != dst->type) {
        copy_converting(ctx, src, dst);
    } else if (ggml_blck_size(dst->type) == 1) {
        copy_same_type(ctx, src, dst);
    } else {
        copy_same_blocks(ctx, src, dst);
    }
}

// ---- CONCAT, REPEAT, PAD ------------------------------------------------------------------------

void concat(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * a    = dst->src[0];
    const ggml_tensor * b    = dst->src[1];
    const int           dim  = ggml_get_op_param<int32_t>(dst, 0);
    const size_t        size = ggml_type_size(dst->type);
    const int64_t       nb0  = int64_t(dst->nb[0]);
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(dst->ne[0]), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            uint8_t *       out = row_ptr(dst, ri);
            if (dim == 0) {
                copy_elements(out, nb0, row_ptr(a, ri), int64_t(a->nb[0]), a->ne[0], size);
                copy_elements(out + a->ne[0] * nb0, nb0, row_ptr(b, ri), int64_t(b->nb[0]), b->ne[0], size);
                continue;
            }
            int64_t idx[4] = {0, ri.i1, ri.i2, ri.i3};
            const ggml_tensor * from = a;
            if (idx[dim] >= a->ne[dim]) {
                idx[dim] -= a->ne[dim];
                from = b;
            }
            copy_elements(out, nb0, row_ptr(from, idx[1], idx[2], idx[3]), int64_t(from->nb[0]), dst->ne[0], size);
        }
    });
}

void repeat(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * src  = dst->src[0];
    const size_t        size = ggml_type_size(dst->type);
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(dst->ne[0]), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            const uint8_t * in  = row_ptr(src, ri.i1 % src->ne[1], ri.i2 % src->ne[2], ri.i3 % src->ne[3]);
            uint8_t *       out = row_ptr(dst, ri);
            for (int64_t base = 0; base < dst->ne[0]; base += src->ne[0]) {
                copy_elements(out + base * int64_t(dst->nb[0]), int64_t(dst->nb[0]), in, int64_t(src->nb[0]),
                              src->ne[0], size);
            }
        }
    });
}

// GGML's op_params: (left, right) padding per dimension; padded elements are zero.
void pad(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * src  = dst->src[0];
    const size_t        size = ggml_type_size(dst->type);
    int64_t             left[4];
    for (int d = 0; d < 4; ++d) {
        left[d] = ggml_get_op_param<int32_t>(dst, 2 * d);
    }
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(dst->ne[0]), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            uint8_t *       out = row_ptr(dst, ri);
            for (int64_t i0 = 0; i0 < dst->ne[0]; ++i0) {
                std::memset(out + i0 * int64_t(dst->nb[0]), 0, size);
            }
            const int64_t s1 = ri.i1 - left[1], s2 = ri.i2 - left[2], s3 = ri.i3 - left[3];
            if (s1 < 0 || s1 >= src->ne[1] || s2 < 0 || s2 >= src->ne[2] || s3 < 0 || s3 >= src->ne[3]) {
                continue;
            }
            copy_elements(out + left[0] * int64_t(dst->nb[0]), int64_t(dst->nb[0]), row_ptr(src, s1, s2, s3),
                          int64_t(src->nb[0]), src->ne[0], size);
        }
    });
}

// GGML's ROLL: dst[i] = src[(i - shift) mod ne] in each dimension (op_params 0-3).
void roll(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * src  = dst->src[0];
    const size_t        size = ggml_type_size(dst->type);
    int64_t             shift[4];
    for (int d = 0; d < 4; ++d) {
        shift[d] = ((ggml_get_op_param<int32_t>(dst, d) % dst->ne[d]) + dst->ne[d]) % dst->ne[d];
    }
    auto from = [&](int64_t i, int d) { return (i - shift[d] + dst->ne[d]) % dst->ne[d]; };
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(dst->ne[0]), [&](int64_t r0, int64_t r1) {
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri  = unravel_row(dst, r);
            const uint8_t * in  = row_ptr(src, from(ri.i1, 1), from(ri.i2, 2), from(ri.i3, 3));
            uint8_t *       out = row_ptr(dst, ri);
            for (int64_t i0 = 0; i0 < dst->ne[0]; ++i0) {
                std::memcpy(out + i0 * int64_t(dst->nb[0]), in + from(i0, 0) * int64_t(src->nb[0]), size);
            }
        }
    });
}

bool element_addressable_like(const ggml_tensor * op, const ggml_tensor * src) {
    return src && src->type == op->type && ggml_blck_size(op->type) == 1;
}

} // namespace

bool supports_layout(const ggml_tensor * op) {
    const ggml_tensor * a = op->src[0];
    if (!a) {
        return false;
    }
    switch (op->op) {
        case GGML_OP_CPY:
        case GGML_OP_CONT:
        case GGML_OP_DUP:
            return supports_copy(op);
        case GGML_OP_CONCAT: {
            const ggml_tensor * b   = op->src[1];
            const int32_t       dim = ggml_get_op_param<int32_t>(op, 0);
            if (!element_addressable_like(op, a) || !element_addressable_like(op, b) || dim < 0 || dim > 3) {
                return false;
            }
            for (int d = 0; d < GGML_MAX_DIMS; ++d) {
                const bool ok = d == dim ? op->ne[d] == a->ne[d] + b->ne[d]
                                         : op->ne[d] == a->ne[d] && b->ne[d] == a->ne[d];
                if (!ok) {
                    return false;
                }
            }
            return true;
        }
        case GGML_OP_REPEAT:
            return element_addressable_like(op, a) && ggml_can_repeat(a, op);
        case GGML_OP_ROLL:  // GGML's takes F32
            return op->type == GGML_TYPE_F32 && element_addressable_like(op, a) && ggml_are_same_shape(op, a);
        default: {  // PAD
            if (!element_addressable_like(op, a)) {
                return false;
            }
            for (int d = 0; d < GGML_MAX_DIMS; ++d) {
                const int32_t lp = ggml_get_op_param<int32_t>(op, 2 * d);
                const int32_t rp = ggml_get_op_param<int32_t>(op, 2 * d + 1);
                if (lp < 0 || rp < 0 || op->ne[d] != a->ne[d] + lp + rp) {
                    return false;
                }
            }
            return true;
        }
    }
}

void compute_layout(const compute_context & ctx, ggml_tensor * dst) {
    switch (dst->op) {
        case GGML_OP_CONCAT:
            return concat(ctx, dst);
        case GGML_OP_REPEAT:
            return repeat(ctx, dst);
        case GGML_OP_PAD:
            return pad(ctx, dst);
        case GGML_OP_ROLL:
            return roll(ctx, dst);
        default:
            return compute_copy(ctx, dst);
    }
}

} // namespace hexnpu::cpu
