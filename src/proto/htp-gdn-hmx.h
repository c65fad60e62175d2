// GATED_DELTA_NET for prompts on the HMX unit (htp/ops/gated-delta-net-hmx-ops.cpp): the chunked
// form of the delta rule. A work item is one (head, sequence) with its state N[i][j] (key i, value
// j) in VTCM as fp32; its tokens go in chunks of C = 32. For a chunk with the state N0 at its start,
// G_t the running sum of g over the chunk (t = 0..31), gamma_t = e^G_t, D[t][j] = e^(G_t - G_j) for
// j <= t (0 above), the recurrence of htp-linear-attn.h unrolls to
//   u_t = beta_t (v_t - gamma_t N0ᵀ k_t - sum_{j<t} D[t][j] (k_t . k_j) u_j)
//       = rows of U: (I + A) U = R,  A[t][j] = beta_t D[t][j] (K Kᵀ)[t][j] (j < t),
//                                    R[t] = beta_t (v_t - gamma_t (K N0)[t])
//   o_t = scale (gamma_t (Q N0)[t] + sum_{j<=t} D[t][j] (Q Kᵀ)[t][j] u_j)  = scale (gamma Q N0 + P U)
//   N   = gamma_31 N0 + Kᵀ diag(e^(G_31 - G_j)) U
// (the same sums in another order: fp32 rounding apart, GGML's answer). The six products run on
// the HMX unit, in two jobs per chunk for a group of items in lock step:
//   HVX  q, k, v rows, g, beta in by DMA; Q, K as activation tiles, Kᵀ and N0 as weight tiles;
//   HMX  K Kᵀ, Q Kᵀ (32 x 32), K N0, Q N0 (32 x S);
//   HVX  D, A, R, the solve by forward substitution (fp32), P; U as weight tiles, Kᵀ diag(w) as
//        activation tiles;
//   HMX  P U (32 x S), Kᵀ diag(w) U (S x S);
//   HVX  the outputs out by DMA, N = gamma_31 N + the update.
// The group runs as two halves, each HVX phase of one while the HMX unit works on the other.
// The last chunk's missing tokens are zeros (k = v = 0, beta = 0, g = 0: they change nothing).
//
// Accuracy: the HMX unit multiplies fp16 and accumulates in fp32, so each product is made exact to
// fp32's order: every operand is split into fp16 hi + lo (lo = the rounding error of hi, itself
// rounded: 2^-22 of the element); a first multiply stores C_hi = fp16(hi.hi), a second accumulates
// hi.hi + lo.hi + hi.lo - C_hi (-I times C_hi: exact) and stores it times 2^11 as C_lo; C = C_hi +
// 2^-11 C_lo is the fp32 sum within 2^-22 of its terms' magnitude (5 multiplies where plain fp16
// takes 1). Operands are scaled by powers of two into [-1, 1] (activation rows each, N0 and U as a
// whole), so no stored value leaves fp16's range (|C| <= 3 x 256 terms of at most 1) and the
// factors are undone exactly in fp32. The state is fp32 throughout. NMSE vs the CPU ~3e-13 (the
// HVX kernel's ~6e-15): llama.cpp's test-backend-ops (1e-7) passes it.
// Taken when: g is one scalar per head and token (not KDA), S a multiple of 32 up to 256, K == 1
// (only the final state kept), at least HTP_GDN_HMX_MIN_TOKENS tokens; else the HVX kernel.
// A device group's members split the items, as for the HVX kernel.
#pragma once

#include "proto/htp-linear-attn.h"
#include "proto/hw-model.h"

#include <stdint.h>

namespace hexnpu::proto {

inline constexpr uint32_t HTP_GDN_HMX_CHUNK      = 32;   // tokens per chunk: one tile of rows
inline constexpr uint32_t HTP_GDN_HMX_MIN_TOKENS = 32;   // from a whole chunk on (GGML_HEXAGON_GDN_SELECT 2)
inline constexpr uint32_t HTP_GDN_HMX_MAX_GROUP  = 64;   // items in lock step at most
inline constexpr uint32_t HTP_GDN_HMX_TILE       = 2048;
// The op's VTCM starts with -I as an activation tile and the two scale/bias blocks (1, 2^11).
inline constexpr uint32_t HTP_GDN_HMX_HEADER     = 2 * HTP_GDN_HMX_TILE;

struct htp_gdn_hmx_kparams {
    uint32_t       n_threads;
    uint32_t       n_items;      // H * n_seqs, item = s * H + h
    uint32_t       group_items;  // items in lock step
    uint32_t       item_bytes;   // htp_gdn_hmx_item(S).bytes
    uint32_t       vtcm_size;    // htp_gdn_hmx_vtcm_size(group_items, S)
    uint32_t       S;            // head size, a multiple of 32
    uint32_t       n_chunks;     // ceil(T / 32)
    uint32_t       scale;        // the bits of 1 / sqrt(S)
    uint32_t       state_off;    // bytes of dst before the final state: S H T n_seqs * 4
    htp_gdn_heads  heads;
};
static_assert(sizeof(htp_gdn_hmx_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// One item's VTCM (offsets; tiles first, each 2048 bytes; nv = S / 32):
//   q, k       activation tiles, hi then lo (nv each)
//   kt         Kᵀ weight tiles (key block ib: k = keys, n = tokens), hi, lo
//   st         N0 weight tiles, value block jb's nv key blocks together, hi, lo (nv² each); then
//              the update's output tiles (ib * nv + jb), and the state's GGML-layout staging
//   kk, qk     output tiles, hi and lo
//   ks, qs     output tiles (nv each, hi then lo); ks then holds P U's
//   p          P as activation tiles, hi, lo
//   u          U as weight tiles (k = tokens, n = value block jb), hi, lo
//   kw         Kᵀ diag(w) as activation tiles (rows = keys of block ib, k = tokens), hi, lo
// then fp32 rows (128-byte aligned): the state N (S rows of S), q, k, v (32 rows of S), kt (S rows
// of 32 tokens), kk and qk (32 rows of 32), the vectors (g, beta, G, the row factors: see
// gdn_vectors in the kernel), the transposes' scratch (64 vectors).
struct htp_gdn_hmx_item_layout {
    uint32_t q, k, kt, st, kk, qk, ks, qs, p, u, kw;                     // tiles
    uint32_t n, qr, kr, vr, ktr, kkr, qkr, vecs, rowf, scratch, bytes;   // fp32
};
inline constexpr uint32_t HTP_GDN_HMX_VECS = 16;  // vectors of per-token values

constexpr htp_gdn_hmx_item_layout htp_gdn_hmx_item(uint32_t S) {
    const uint32_t          nv = S / 32, T = HTP_GDN_HMX_TILE;
    htp_gdn_hmx_item_layout l{};
    l.q       = 0;
    l.k       = l.q + 2 * nv * T;
    l.kt      = l.k + 2 * nv * T;
    l.st      = l.kt + 2 * nv * T;
    l.kk      = l.st + 2 * nv * nv * T;
    l.qk      = l.kk + 2 * T;
    l.ks      = l.qk + 2 * T;
    l.qs      = l.ks + 2 * nv * T;
    l.p       = l.qs + 2 * nv * T;
    l.u       = l.p + 2 * T;
    l.kw      = l.u + 2 * nv * T;
    l.n       = l.kw + 2 * nv * T;
    l.qr      = l.n + S * S * 4;
    l.kr      = l.qr + 32 * S * 4;
    l.vr      = l.kr + 32 * S * 4;
    l.ktr     = l.vr + 32 * S * 4;
    l.kkr     = l.ktr + S * 128;
    l.qkr     = l.kkr + 32 * 128;
    l.vecs    = l.qkr + 32 * 128;
    l.rowf    = l.vecs + HTP_GDN_HMX_VECS * 128;  // per key row of kw: its factor (S floats)
    l.scratch = l.rowf + (S * 4 + 127) / 128 * 128;
    l.bytes   = (l.scratch + 64 * 128 + T - 1) / T * T;
    return l;
}

// Where an item placed at `off` (or later) starts: its tiles may not straddle a 4 MiB VTCM bank
// (no tile run may), so an item whose tiles would is moved to the next bank.
constexpr uint32_t htp_gdn_hmx_place(uint32_t off, const htp_gdn_hmx_item_layout & l) {
    const uint32_t last = off + l.n - 1;
    return off / HW_VTCM_BANK_BYTES == last / HW_VTCM_BANK_BYTES ? off : last / HW_VTCM_BANK_BYTES * HW_VTCM_BANK_BYTES;
}
// The op's VTCM for `items` items: the header, then the items, each placed as above.
constexpr uint64_t htp_gdn_hmx_vtcm_size(uint32_t items, uint32_t S) {
    const htp_gdn_hmx_item_layout l   = htp_gdn_hmx_item(S);
    uint64_t                      off = HTP_GDN_HMX_HEADER;
    for (uint32_t n = 0; n < items; ++n) {
        off = uint64_t(htp_gdn_hmx_place(uint32_t(off), l)) + l.bytes;
    }
    return off;
}

inline htp_verdict prepare_gdn_hmx_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    const htp_tensor & q = *a.src[0];
    const htp_tensor & k = *a.src[1];
    const htp_tensor & v = *a.src[2];
    const htp_tensor & g = *a.src[3];
    const int32_t      K = a.params[0];
    if (K != 1 || !htp_gdn_layout_valid(q, k, v, g, *a.src[4], *a.src[5], *a.dst, 1)) {
        return htp_refuse("the HMX GATED_DELTA_NET keeps the final state only (K == 1), GGML's shapes");
    }
    if (const char * why = htp_gdn_shape_refusal(a)) {
        return htp_refuse(why);
    }
    const uint32_t S = v.ne[0], H = v.ne[1], T = v.ne[2], NS = v.ne[3];
    if (g.ne[0] != 1) {
        return htp_refuse("the HMX GATED_DELTA_NET takes one gate per head and token (not KDA)");
    }
    if (S % 32 != 0) {
        return htp_refuse("the HMX GATED_DELTA_NET takes head sizes that are multiples of 32");
    }
    if (T < HTP_GDN_HMX_MIN_TOKENS) {
        return htp_refuse("fewer tokens than a chunk");
    }
    const uint32_t      items = H * NS;  // below 2^32: the outputs are
    htp_gdn_hmx_kparams kp{};
    kp.n_items      = items;
    kp.item_bytes   = htp_gdn_hmx_item(S).bytes;
    // As many items in lock step as the VTCM holds.
    const uint32_t most = items < HTP_GDN_HMX_MAX_GROUP ? items : HTP_GDN_HMX_MAX_GROUP;
    while (kp.group_items < most && htp_gdn_hmx_vtcm_size(kp.group_items + 1, S) <= a.vtcm_size) {
        ++kp.group_items;
    }
    if (kp.group_items == 0) {
        return htp_refuse(HTP_REFUSED_VTCM);
    }
    kp.n_threads   = a.n_threads < kp.group_items ? a.n_threads : kp.group_items;
    kp.vtcm_size   = uint32_t(htp_gdn_hmx_vtcm_size(kp.group_items, S));
    kp.S           = S;
    kp.n_chunks    = (T + HTP_GDN_HMX_CHUNK - 1) / HTP_GDN_HMX_CHUNK;
    const float scale = 1.0f / __builtin_sqrtf(float(S));
    kp.scale       = __builtin_bit_cast(uint32_t, scale);
    kp.state_off   = S * H * T * NS * 4;
    kp.heads       = htp_gdn_heads_of(q, k, v);
    return htp_store_kparams(HTP_TAKEN, kp, kparams);
}

} // namespace hexnpu::proto
