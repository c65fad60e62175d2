// GET_ROWS (gather rows by index, dequantizing to F32; I32 rows copied as they are) and SET_ROWS
// (scatter F32 rows by index, converting to the destination's type, quantized types included).
// Indices are I32 or I64 and are checked against the indexed dimension before any row moves.
#include "cpu-ops.h"
#include "cpu-tensor.h"

#include "hexnpu/backend.h"

#include <string>
#include <vector>

namespace hexnpu::cpu {
namespace {

void check_row_ids(const ggml_tensor * ids, int64_t n_rows, const char * op) {
    for (int64_t i2 = 0; i2 < ids->ne[2]; ++i2) {
        for (int64_t i1 = 0; i1 < ids->ne[1]; ++i1) {
            for (int64_t i0 = 0; i0 < ids->ne[0]; ++i0) {
                const int64_t id = load_index(ids, i0, i1, i2);
                if (id < 0 || id >= n_rows) {
                    throw backend_error(std::string(op) + ": row id " + std::to_string(id) + " outside [0, " +
                                        std::to_string(n_rows) + ")");
                }
            }
        }
    }
}

bool is_index_type(ggml_type type) { return type == GGML_TYPE_I32 || type == GGML_TYPE_I64; }

void get_rows(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * a   = dst->src[0];
    const ggml_tensor * ids = dst->src[1];
    check_row_ids(ids, a->ne[1], "GET_ROWS");
    const int64_t ne0 = dst->ne[0];
    ctx.parallel_for(ggml_nrows(dst), rows_per_chunk(ne0), [&](int64_t r0, int64_t r1) {
        std::vector<float> buf(ne0);
        for (int64_t r = r0; r < r1; ++r) {
            const row_index ri   = unravel_row(dst, r);
            const row_index from = {load_index(ids, ri.i1, ri.i2, ri.i3), ri.i2, ri.i3};
            if (a->type == dst->type) {  // F32 or integer rows: bytes, exact for every value
                copy_elements(row_ptr(dst, ri), int64_t(dst->nb[0]), row_ptr(a, from), int64_t(a->nb[0]), ne0,
                              ggml_type_size(a->type));
                continue;
            }
            float * out = out_row_f32(dst, ri, buf.data());
            load_row(a, from, out);
            commit_row(dst, ri, out);
        }
    });
}

void set_rows(const compute_context & ctx, ggml_tensor * dst) {
    const ggml_tensor * src = dst->src[0];
    const ggml_tensor * ids = dst->src[1];
    check_row_ids(ids, dst->ne[1], "SET_ROWS");
    const int64_t ne0 = src->ne[0];
    // Rows are split by source row; two source rows aimed at one destination row race, as in GGML.
    ctx.parallel_for(ggml_nrows(src), rows_per_chunk(ne0), [&](int64_t r0, int64_t r1) {
        std::vector<float> buf(ne0);
        for (int64_t r = r0; r < r1; ++r) {
            const row_index si = unravel_row(src, r);
            const int64_t   id = load_index(ids, si.i1, si.i2 % ids->ne[1], si.i3 % ids->ne[2]);
            store_row(dst, {id, si.i2, si.i3}, row_f32(src, si, buf.data()));
        }
    });
}

} // namespace

bool supports_rows(const ggml_tensor * op) {
    const ggml_tensor * src = op->src[0];
    const ggml_tensor * ids = op->src[1];
    if (!src || !ids || !is_index_type(ids->type) || ids->ne[3] != 1 || op->ne[0] != src->ne[0]) {
        return false;
    }
    if (op->op == GGML_OP_GET_ROWS) {
        const bool convertible = op->type == GGML_TYPE_F32 && can_load_rows(src);
        const bool same_bytes  = op->type == src->type && ggml_blck_size(src->type) == 1;
        return (convertible || same_bytes) && op->ne[1] == ids->ne[0] && op->ne[2] == ids->ne[1] &&
               op->ne[3] == ids->ne[2] && src->ne[2] == ids->ne[1] && src->ne[3] == ids->ne[2];
    }
    // SET_ROWS: op is the destination (a view of it); ids broadcast over src's dims 2 and 3.
    return is_float_type(src->type) && can_store_rows(op) && src->ne[2] == op->ne[2] && src->ne[3] == op->ne[3] &&
           ids->ne[0] == src->ne[1] && ids->ne[1] > 0 && ids->ne[2] > 0 && src->ne[2] % ids->ne[1] == 0 &&
           src->ne[3] % ids->ne[2] == 0;
}

void compute_rows(const compute_context & ctx, ggml_tensor * dst) {
    if (dst->op == GGML_OP_GET_ROWS) {
        get_rows(ctx, dst);
    } else {
        set_rows(ctx, dst);
    }
}

} // namespace hexnpu::cpu
