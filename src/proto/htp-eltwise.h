// The element-wise pipeline the streaming NPU ops share (binary, unary, ROPE, the row ops): per
// thread, one VTCM area per stream (src0, [src1,] dst) of n_slots slots of block_rows rows each,
// rows vtcm_row_stride apart (htp_eltwise_vtcm_size), the flattened rows ne1*ne2*ne3 split over
// n_threads. A block never crosses an (i2, i3) slice, nor, when src1 repeats within a slice
// (1 < ne11 < ne1), a repetition of src1's rows. Also the row layout checks the families' prepare
// functions (host) and guards (NPU) share. Both sides compile this header: the host plans, the
// kernels execute the plan as given (spec: host precomputes, NPU executes).
#pragma once

#include "proto/fastdiv.h"
#include "proto/htp-msg.h"
#include "proto/htp-types.h"
#include "proto/htp-prepare.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_ELTWISE_TYPE        = 0;      // GGML_TYPE_F32, the only type these ops take
inline constexpr uint32_t HTP_ELTWISE_MAX_SLOTS   = 4;      // deepest pipeline the kernels keep
inline constexpr uint32_t HTP_ELTWISE_BLOCK_BYTES = 16384;  // rows per DMA block aim at this many bytes
inline constexpr uint32_t HTP_VTCM_ROW_ALIGN      = 128;    // one HVX vector

// How a thread streams its rows; the same for every element-wise op.
struct htp_eltwise_pipeline {
    uint32_t n_threads;        // threads the rows are split over, <= the session's
    uint32_t rows_per_thread;  // ceil(rows / n_threads): thread i takes rows [i * it, (i + 1) * it)
    uint32_t block_rows;       // rows per DMA block
    uint32_t n_slots;          // blocks in flight per stream, 2..HTP_ELTWISE_MAX_SLOTS
    uint32_t row_size;         // ne0 * 4: bytes each DMA moves per row
    uint32_t vtcm_row_stride;  // row_size rounded up to 128: rows in VTCM start vector aligned
    uint32_t vtcm_size;        // bytes of VTCM the op takes: htp_eltwise_vtcm_size(...)
};

constexpr uint32_t htp_vtcm_row_stride(uint32_t row_size) {
    return (row_size + HTP_VTCM_ROW_ALIGN - 1) / HTP_VTCM_ROW_ALIGN * HTP_VTCM_ROW_ALIGN;
}

// Bytes of one slot, and of the whole layout: thread t's areas start at t * n_streams * n_slots
// slots, stream s's at s * n_slots slots within them, slot k at k slots within that.
constexpr uint64_t htp_eltwise_slot_bytes(const htp_eltwise_pipeline & p) {
    return uint64_t(p.block_rows) * p.vtcm_row_stride;
}
constexpr uint64_t htp_eltwise_vtcm_size(const htp_eltwise_pipeline & p, uint32_t n_streams) {
    return uint64_t(p.n_threads) * n_streams * p.n_slots * htp_eltwise_slot_bytes(p);
}

// Rows of ne0 elements of elem bytes, the elements in order within each row, the rows anywhere
// (they may be permuted or overlap), the last byte inside the tensor's (64-bit sums: no wrap).
constexpr bool htp_rows_inside(const htp_tensor & t, uint32_t elem) {
    if (t.nb[0] != elem || t.ne[0] == 0) {
        return false;
    }
    uint64_t end = uint64_t(t.ne[0]) * elem;
    for (int d = 1; d < 4; ++d) {
        if (t.ne[d] == 0) {
            return false;
        }
        end += uint64_t(t.ne[d] - 1) * t.nb[d];
    }
    return end <= t.size;
}

// ... and no two rows overlapping: each inside its stride, each slice inside its own (not
// permuted), as a tensor the kernels write must be.
constexpr bool htp_rows_apart(const htp_tensor & t, uint32_t elem) {
    return t.nb[1] >= uint64_t(t.ne[0]) * elem && t.nb[2] >= uint64_t(t.ne[1]) * t.nb[1] &&
           t.nb[3] >= uint64_t(t.ne[2]) * t.nb[2] && htp_rows_inside(t, elem);
}

// A source read row by row: F32 rows inside (nothing writes them).
constexpr bool htp_eltwise_source_rows_valid(const htp_tensor & t) {
    return t.type == HTP_ELTWISE_TYPE && htp_rows_inside(t, 4);
}

// As above, and the rows apart (row_size bytes each: at least ne0 * 4).
constexpr bool htp_eltwise_rows_valid(const htp_tensor & t, uint32_t row_size) {
    return t.nb[1] >= row_size && htp_rows_apart(t, 4) && t.type == HTP_ELTWISE_TYPE;
}
constexpr bool htp_same_shape(const htp_tensor & a, const htp_tensor & b) {
    return a.ne[0] == b.ne[0] && a.ne[1] == b.ne[1] && a.ne[2] == b.ne[2] && a.ne[3] == b.ne[3];
}

// Bytes of one element of the float row types the streaming ops convert (F32 0, F16 1, BF16 30);
// 0 for others.
constexpr uint32_t htp_cpy_elem_size(uint32_t type) { return type == HTP_TYPE_F32 ? 4 : type == HTP_TYPE_F16 || type == HTP_TYPE_BF16 ? 2 : 0; }

// The pipeline for total_rows rows of row_size bytes with n_streams streams on at most n_threads
// threads: blocks of about HTP_ELTWISE_BLOCK_BYTES, three deep, shrunk (rows first, then depth)
// until the layout fits vtcm_size. Refused when even one row, double buffered, does not fit.
constexpr htp_verdict htp_eltwise_plan(uint64_t total_rows, uint32_t row_size, uint32_t n_streams, uint32_t n_threads,
                                uint32_t vtcm_size, htp_eltwise_pipeline * out) {
    if (total_rows == 0) {
        return htp_refuse("the tensor has no rows");
    }
    if (total_rows > UINT32_MAX) {
        return htp_refuse("more than 2^32 rows");
    }
    if (n_threads == 0 || n_threads > HTP_MAX_NTHREADS) {
        return htp_refuse("the session's thread count is out of range");
    }
    htp_eltwise_pipeline p{};
    p.n_threads              = total_rows < n_threads ? uint32_t(total_rows) : n_threads;
    p.row_size               = row_size;
    p.vtcm_row_stride        = htp_vtcm_row_stride(row_size);
    const uint64_t per_thread = (total_rows + p.n_threads - 1) / p.n_threads;
    p.rows_per_thread         = uint32_t(per_thread);
    const uint64_t target     = HTP_ELTWISE_BLOCK_BYTES / p.vtcm_row_stride;
    p.block_rows = uint32_t(target < 1 ? 1 : (target < per_thread ? target : per_thread));
    p.n_slots    = 3;
    while (htp_eltwise_vtcm_size(p, n_streams) > vtcm_size) {
        if (p.block_rows > 1) {
            p.block_rows /= 2;
        } else if (p.n_slots > 2) {
            --p.n_slots;
        } else {
            return htp_refuse(HTP_REFUSED_VTCM);
        }
    }
    p.vtcm_size = uint32_t(htp_eltwise_vtcm_size(p, n_streams));
    *out        = p;
    return HTP_TAKEN;
}

// The pipeline of the ops that move one dst row (of elem-byte elements) per block (GET_ROWS, PAD,
// CONCAT, REPEAT, ROLL): two streams (the fetched row, the result), and the walk over dst's rows.
inline htp_verdict htp_dst_row_plan(const htp_tensor & dst, uint32_t n_threads, uint32_t vtcm_size,
                                    htp_eltwise_pipeline * pipe, fastdiv_values * div_ne1, fastdiv_values * div_ne2,
                                    uint32_t elem = 4) {
    const uint64_t total_rows = uint64_t(dst.ne[1]) * dst.ne[2] * dst.ne[3];
    if (const htp_verdict v = htp_eltwise_plan(total_rows, dst.ne[0] * elem, 2, n_threads, vtcm_size, pipe); !v) {
        return v;
    }
    pipe->block_rows = 1;
    pipe->vtcm_size  = uint32_t(htp_eltwise_vtcm_size(*pipe, 2));
    *div_ne1         = init_fastdiv(dst.ne[1]);
    *div_ne2         = init_fastdiv(dst.ne[2]);
    return HTP_TAKEN;
}

} // namespace hexnpu::proto
