// A bitonic sorting network over n = 2^log2_n signed 32-bit keys in VTCM (32 per vector), carrying
// an index with every key: after hvx_bitonic_sort the keys ascend and each index still sits with
// its key. Exact (integer compares only); equal keys may come out in either order. Work:
// n/32 * log2_n (log2_n + 1) / 2 compare-exchange steps of a few vector ops each.
//
// The network's steps by stride: strides of 32 lanes or more pair whole vectors (vmin/vmax-style
// selects on a vector compare); strides 16..1 pair lanes within a vector, the partner brought by
// two rotations. Each step is one pass over the vectors in VTCM. A step's direction (ascending or descending block) and a lane's side (lower or
// upper) fold into one flip mask: comparing key ^ flip with partner ^ flip turns "take the larger"
// into "take the smaller" where the mask is set.
#pragma once

#include "hvx-order-key.h"
#include "vnpu/hvx/hvx.h"

#include <stdint.h>

namespace hexnpu::htp {

// Lane index 0..31 in each 32-bit lane (inclusive prefix sum of ones, minus one).
inline HVX_Vector hvx_lane_index_w() {
    HVX_Vector v = Q6_V_vsplat_R(1);
    for (int32_t bytes = 4; bytes <= 64; bytes *= 2) {
        v = Q6_Vw_vadd_VwVw(v, Q6_V_vlalign_VVR(v, Q6_V_vzero(), bytes));
    }
    return Q6_Vw_vsub_VwVw(v, Q6_V_vsplat_R(1));
}

// All ones in the lanes whose index has bit b set, else zero.
inline HVX_Vector hvx_lane_bit_mask(HVX_Vector lane, int32_t b) {
    return Q6_Vw_vasr_VwR(Q6_Vw_vasl_VwR(lane, 31 - b), 31);
}

// fp32 bits as keys that order as the values do, every NaN one key above +inf (the CPU
// reference's order; -0 just below +0), reversed (bitwise not) for a descending sort.
inline HVX_Vector hvx_sort_key(HVX_Vector x, bool descending) {
    const HVX_Vector key = hvx_sf_order_key(x);
    const HVX_VectorPred nan =
        Q6_Q_vcmp_gt_VwVw(Q6_V_vand_VV(x, Q6_V_vsplat_R(0x7FFFFFFF)), Q6_V_vsplat_R(0x7F800000));
    const HVX_Vector ordered = Q6_V_vmux_QVV(nan, Q6_V_vsplat_R(0x7F800001), key);
    return descending ? Q6_V_vnot_V(ordered) : ordered;
}

namespace detail_sort {

// One in-vector step over every vector: lanes paired at stride 2^b, each taking its partner's key
// (and index) where the partner's is smaller (its flip lanes) or greater (the others). The lower
// lane of a pair keeps the smaller key in an ascending block; a block is descending where bit
// desc_bit of the lane index (block sizes below 32; -1: none) or bit vec_bit of the vector index
// (sizes of 32 and up; 0: none) is set. One pass per step keeps three constants live, and the
// caller none across the calls: no spills.
__attribute__((noinline)) inline void lane_pass(HVX_Vector * keys, HVX_Vector * idx, uint32_t n_vec, int32_t b,
                                                int32_t desc_bit, uint32_t vec_bit) {
    const int32_t        bytes     = 4 << b;
    const HVX_Vector     lane      = hvx_lane_index_w();
    const HVX_Vector     upper     = hvx_lane_bit_mask(lane, b);
    const HVX_Vector     lane_desc = desc_bit < 0 ? Q6_V_vzero() : hvx_lane_bit_mask(lane, desc_bit);
    const HVX_VectorPred is_up     = Q6_Q_vand_VR(upper, -1);
    const HVX_Vector     lower     = Q6_V_vxor_VV(Q6_V_vnot_V(upper), lane_desc);
    for (uint32_t v = 0; v < n_vec; ++v) {
        const HVX_Vector     key  = keys[v], id = idx[v];
        const HVX_Vector     flip = Q6_V_vxor_VV(lower, Q6_V_vsplat_R((v & vec_bit) ? -1 : 0));
        const HVX_Vector     pkey = Q6_V_vmux_QVV(is_up, Q6_V_vror_VR(key, 128 - bytes), Q6_V_vror_VR(key, bytes));
        const HVX_Vector     pidx = Q6_V_vmux_QVV(is_up, Q6_V_vror_VR(id, 128 - bytes), Q6_V_vror_VR(id, bytes));
        const HVX_VectorPred take = Q6_Q_vcmp_gt_VwVw(Q6_V_vxor_VV(pkey, flip), Q6_V_vxor_VV(key, flip));
        keys[v]                   = Q6_V_vmux_QVV(take, pkey, key);
        idx[v]                    = Q6_V_vmux_QVV(take, pidx, id);
    }
}

// One step between vectors stride apart: of each pair (v, v + stride), v keeps the smaller keys,
// or the larger where bit size_vec of v is set (a descending block).
__attribute__((noinline)) inline void vector_pass(HVX_Vector * keys, HVX_Vector * idx, uint32_t n_vec, uint32_t stride,
                                                  uint32_t size_vec) {
    for (uint32_t v = 0; v < n_vec; ++v) {
        if ((v & stride) != 0) {
            continue;
        }
        const uint32_t       w    = v + stride;
        const HVX_Vector     a    = keys[v], b = keys[w];
        const HVX_Vector     ia   = idx[v], ib = idx[w];
        const HVX_VectorPred swap = (v & size_vec) ? Q6_Q_vcmp_gt_VwVw(b, a) : Q6_Q_vcmp_gt_VwVw(a, b);
        keys[v]                   = Q6_V_vmux_QVV(swap, b, a);
        keys[w]                   = Q6_V_vmux_QVV(swap, a, b);
        idx[v]                    = Q6_V_vmux_QVV(swap, ib, ia);
        idx[w]                    = Q6_V_vmux_QVV(swap, ia, ib);
    }
}

} // namespace detail_sort

// Every lane: the smallest of v's 32 signed words.
inline HVX_Vector hvx_w_allmin(HVX_Vector v) {
    for (int32_t bytes = 64; bytes >= 4; bytes /= 2) {
        v = Q6_Vw_vmin_VwVw(v, Q6_V_vror_VR(v, bytes));
    }
    return v;
}

// keys[0 .. 2^log2_n / 32) and idx alike, log2_n >= 5: sorted ascending by key. A block's
// direction is the bit of its size in the element index (none for the whole).
inline void hvx_bitonic_sort(HVX_Vector * keys, HVX_Vector * idx, uint32_t log2_n) {
    const uint32_t n_vec = uint32_t(1) << (log2_n - 5);
    // Blocks of 2..16 keys, directions from the lane bits, then of 32: ascending in even vectors.
    for (int32_t size_bit = 1; size_bit <= 4; ++size_bit) {
        for (int32_t b = size_bit - 1; b >= 0; --b) {
            detail_sort::lane_pass(keys, idx, n_vec, b, size_bit, 0);
        }
    }
    for (int32_t b = 4; b >= 0; --b) {
        detail_sort::lane_pass(keys, idx, n_vec, b, -1, 1);
    }
    // Blocks of 64 keys and up: vector pairs down to a stride of one vector, then the lanes.
    for (uint32_t size_vec = 2; size_vec <= n_vec; size_vec *= 2) {
        for (uint32_t stride = size_vec / 2; stride >= 1; stride /= 2) {
            detail_sort::vector_pass(keys, idx, n_vec, stride, size_vec);
        }
        for (int32_t b = 4; b >= 0; --b) {
            detail_sort::lane_pass(keys, idx, n_vec, b, -1, size_vec);
        }
    }
}

} // namespace hexnpu::htp
