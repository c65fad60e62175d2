// Tensor helpers for kernels: addresses, contiguity, row counts, and the multi-device (mdev) row
// partitioning of the spec ("Multi-Device Partitioning"): devices that write DDR through HVX/L2 must
// never share a 128-byte line, so work is split in chunks whose bytes start and end on line bounds.
#pragma once

#include "dma-queue.h"
#include "htp/platform.h"
#include "proto/fastdiv.h"
#include "proto/htp-msg.h"

#include <stdint.h>

namespace hexnpu::htp {

inline constexpr uint32_t HTP_TYPE_F32         = 0;
inline constexpr uint32_t HTP_TYPE_F16         = 1;
inline constexpr uint32_t HTP_TYPE_I32         = 26;
inline constexpr uint32_t HTP_TYPE_BF16        = 30;
inline constexpr uint32_t HTP_TYPE_I64         = 27;
inline constexpr uint32_t HTP_TYPE_COUNT       = 43;  // GGML type ids a descriptor may carry
inline constexpr uint32_t HTP_L2_LINE_SIZE     = 128;

// After the batch loop rewrote data to the tensor's NPU address.
inline uint8_t * htp_tensor_ptr(const platform * plat, const proto::htp_tensor * t) {
    return plat->window_base + t->data;
}
inline dma_addr_t htp_tensor_dma_addr(const platform * plat, const proto::htp_tensor * t) {
    return dma_addr_of(htp_tensor_ptr(plat, t));
}

inline uint64_t htp_tensor_nrows(const proto::htp_tensor * t) { return uint64_t(t->ne[1]) * t->ne[2] * t->ne[3]; }

// Strides of dims 2 and 3 are those of packed slices (64-bit products: no wrap-around aliases).
inline bool htp_tensor_slices_packed(const proto::htp_tensor * t) {
    return t->nb[2] == uint64_t(t->ne[1]) * t->nb[1] && t->nb[3] == uint64_t(t->ne[2]) * t->nb[2];
}

// Elements of elem_size bytes, rows and slices packed with no gaps.
inline bool htp_tensor_is_contiguous(const proto::htp_tensor * t, uint32_t elem_size) {
    return t->nb[0] == elem_size && t->nb[1] == uint64_t(t->ne[0]) * elem_size && htp_tensor_slices_packed(t);
}

// Bytes from the first element to one past the last (ne all >= 1), in 64 bits so that a hostile
// descriptor cannot wrap it: what a kernel that walks ne/nb touches, to check against t->size.
inline uint64_t htp_tensor_extent(const proto::htp_tensor * t, uint32_t elem_size) {
    uint64_t last = 0;
    for (int d = 0; d < 4; ++d) {
        last += uint64_t(t->ne[d] - 1) * t->nb[d];
    }
    return last + elem_size;
}

inline bool htp_tensor_mdev_data_aligned(const proto::htp_tensor * t) { return t->data % HTP_L2_LINE_SIZE == 0; }

// 128 / gcd(row_size, 128), the rows per chunk of packed rows: 128 is a power of two, so the gcd is
// row_size's lowest set bit (at most 128), and the quotient a shift (no division on the NPU).
inline uint32_t htp_line_rows(uint32_t row_size) {
    const uint32_t low = row_size & (~row_size + 1);
    return low == 0 || low >= HTP_L2_LINE_SIZE ? 1 : HTP_L2_LINE_SIZE >> __builtin_ctz(low);
}

// The fewest rows of row_size bytes per chunk such that every chunk of the flattened row space
// [0, ne1*ne2*ne3) starts on a line boundary. 1 when rows (and slices) themselves start on line
// boundaries; 128 / gcd(row_size, 128) for packed rows. false (and 0) when no row chunking keeps
// devices off each other's lines: unaligned base, permuted elements, rows wider than their stride,
// or packed rows whose chunks would straddle unaligned slice boundaries.
inline bool htp_tensor_mdev_rows_per_chunk(const proto::htp_tensor * t, uint32_t elem_size, uint32_t row_size,
                                           uint32_t * rows_per_chunk) {
    *rows_per_chunk = 0;
    if (!htp_tensor_mdev_data_aligned(t) || t->nb[0] != elem_size || t->nb[1] < row_size) {
        return false;
    }
    const bool outer_aligned = (t->ne[2] == 1 || t->nb[2] % HTP_L2_LINE_SIZE == 0) &&
                               (t->ne[3] == 1 || t->nb[3] % HTP_L2_LINE_SIZE == 0);
    if (t->nb[1] % HTP_L2_LINE_SIZE == 0 && outer_aligned) {
        *rows_per_chunk = 1;
        return true;
    }
    if (t->nb[1] != row_size) {
        return false;
    }
    const uint32_t rpc = htp_line_rows(row_size);
    if (htp_tensor_slices_packed(t) || (outer_aligned && (t->ne[1] & (rpc - 1)) == 0)) {
        *rows_per_chunk = rpc;
        return true;
    }
    return false;
}

// ceil(a / b) for b >= 1 without a division (none on the NPU): the bits of the quotient, high first.
inline uint32_t ceil_div_small(uint32_t a, uint32_t b) {
    uint32_t q = 0;
    for (int bit = 31; bit >= 0; --bit) {
        const uint64_t t = uint64_t(q | (1u << bit)) * b;
        if (t < a) {
            q |= 1u << bit;
        }
    }
    return a == 0 ? 0 : q + 1;  // the largest q with q * b < a, plus one
}

struct htp_tensor_mdev_range {
    uint32_t start;
    uint32_t count;
};

// Device mdev_idx's share of total_units split in chunks of units_per_chunk (0 or a power of two,
// as the line rules give) over mdev_count devices: whole chunks evenly, the remainder to the last
// device. Device 0 takes everything (and the others nothing) when units_per_chunk is 0 (unsafe to
// split) or there are fewer chunks than devices.
inline htp_tensor_mdev_range htp_tensor_mdev_partition(uint32_t total_units, uint32_t units_per_chunk,
                                                       uint32_t mdev_idx, uint32_t mdev_count,
                                                       const proto::fastdiv_values * mdev_count_div) {
    const uint64_t n_chunks =
        units_per_chunk == 0 ? 0 : (uint64_t(total_units) + units_per_chunk - 1) >> __builtin_ctz(units_per_chunk);
    if (n_chunks < mdev_count) {
        return mdev_idx == 0 ? htp_tensor_mdev_range{0, total_units} : htp_tensor_mdev_range{0, 0};
    }
    const uint32_t chunks_per_device = proto::fastdiv(uint32_t(n_chunks), *mdev_count_div);
    const uint64_t units_per_device  = uint64_t(chunks_per_device) * units_per_chunk;
    const uint32_t start             = uint32_t(units_per_device * mdev_idx);
    const uint32_t count = mdev_idx + 1 == mdev_count ? total_units - start : uint32_t(units_per_device);
    return htp_tensor_mdev_range{start, count};
}

// A group's split of dst's columns in whole 128-byte lines (n_lines of them per row: 32 floats
// each, the last maybe partial) for ops that write column slices of every row (MUL_MAT splits N):
// each device its share of lines, the remainder to the last; everything on device 0 when dst's rows
// do not start on lines (devices would share, and tear, one).
inline htp_tensor_mdev_range htp_tensor_mdev_line_columns(const proto::htp_tensor * dst, uint32_t n_lines,
                                                          const htp_mdev & mdev) {
    const bool lines = htp_tensor_mdev_data_aligned(dst) && dst->nb[1] % HTP_L2_LINE_SIZE == 0 &&
                       dst->nb[2] % HTP_L2_LINE_SIZE == 0 && dst->nb[3] % HTP_L2_LINE_SIZE == 0;
    return htp_tensor_mdev_partition(n_lines, lines ? 1 : 0, mdev.idx, mdev.count, &mdev.count_div);
}

} // namespace hexnpu::htp
