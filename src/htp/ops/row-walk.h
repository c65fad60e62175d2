// Walking a tensor's rows flattened over dims 1..3 (the spec's "flatten outer dimensions
// globally") in DMA blocks that never cross an (i2, i3) slice, so each block is one 2-D transfer.
// Shared by the streaming ops; coordinates come from fastdiv once per thread, then step.
#pragma once

#include "proto/fastdiv.h"
#include "proto/htp-msg.h"

#include <stdint.h>

namespace hexnpu::htp {

// A flat row index and its coordinates (i1, i2, i3).
struct row_cursor {
    uint32_t row, i1, i2, i3;
};

inline row_cursor row_cursor_at(uint32_t row, const proto::fastdiv_values & div_ne1,
                                const proto::fastdiv_values & div_ne2) {
    const uint32_t i23 = proto::fastdiv(row, div_ne1);
    return row_cursor{row, row - i23 * div_ne1.d, proto::fastmodulo(i23, div_ne2), proto::fastdiv(i23, div_ne2)};
}

inline uint32_t row_offset(const proto::htp_tensor * t, uint32_t i1, uint32_t i2, uint32_t i3) {
    return i1 * t->nb[1] + i2 * t->nb[2] + i3 * t->nb[3];
}

// Rows of the next block: at most max_rows, not past `end`, not past the end of c's slice.
inline uint32_t block_rows_at(const row_cursor & c, uint32_t max_rows, uint32_t end, uint32_t ne1) {
    uint32_t n = max_rows;
    n          = n < ne1 - c.i1 ? n : ne1 - c.i1;
    n          = n < end - c.row ? n : end - c.row;
    return n;
}

// Moves c past n rows of its slice; returns true when it stepped into the next slice.
inline bool row_cursor_advance(row_cursor & c, uint32_t n, uint32_t ne1, uint32_t ne2) {
    c.row += n;
    c.i1 += n;
    if (c.i1 != ne1) {
        return false;
    }
    c.i1 = 0;
    if (++c.i2 == ne2) {
        c.i2 = 0;
        ++c.i3;
    }
    return true;
}

// A GET_ROWS / SET_ROWS id at p (I64 or I32; a small DDR table read with scalar loads); false when
// outside [0, limit).
inline bool read_row_id(const uint8_t * p, bool i64, uint32_t limit, uint32_t * out) {
    int64_t id;
    if (i64) {
        __builtin_memcpy(&id, p, 8);
    } else {
        int32_t id32;
        __builtin_memcpy(&id32, p, 4);
        id = id32;
    }
    if (id < 0 || id >= int64_t(limit)) {
        return false;
    }
    *out = uint32_t(id);
    return true;
}

} // namespace hexnpu::htp
