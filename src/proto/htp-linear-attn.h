// kernel_params of SSM_CONV (htp/ops/ssm-conv-ops.cpp) and GATED_DELTA_NET
// (htp/ops/gated-delta-net-ops.cpp) and their host preparation. Both sides compile this header.
//
// SSM_CONV, dst[ch, t, s] = sum_i sx[t + i, ch, s] c[i, ch] (i ascending, as GGML's float sum): a
// work item is 32 channels x up to 32 output times of one sequence. Their sx rows (the channels'
// time series, tb + d_conv - 1 <= 64 columns) land by one 2-D DMA, c's rows by another; HVX turns
// both by 32 x 32 word transposes into vectors over the channels, multiplies and adds tap by tap,
// and the item's outputs leave by one 2-D DMA (tb rows of its channels). Two slots per thread. For a
// few output times (decode) the host picks by_rows: each channel's row stays a vector (its columns
// in lanes), rotated by t, masked to the taps and times c's row, and the 32 channels' products are
// summed across lanes by hvx_sf_row_sums32 (31 shuffles per time against three transposes, 240).
//
// GATED_DELTA_NET (GGML's fused op, K states kept): a work item is one (head, sequence); the
// thread keeps its state in VTCM as N[i][j] = S[i][j] (key i, value j: a row per key, vectors over
// the values), transposed from GGML's layout on the way in and out (32 x 32 word transposes), so
// each token is two passes over the rows with scalars splat from VTCM:
//   pass 1: N[i] *= exp(g) (KDA: exp(g_i)); a += k_i N[i]        -> d = beta (v - a)
//   pass 2: N[i] += k_i d;                  o += q_i N[i]        -> out = o / sqrt(S)
// the order of GGML's CPU (decay, delta from the decayed state, update, output from the updated
// state), with its sums over the keys in ascending i. For a few tokens (decode) the turns would cost
// more than the tokens (two 32 x 32 transposes per block each way against two passes per token), so
// the host picks by_rows there: the state stays in GGML's layout (rows per value j over the keys),
// each row's products with k and q are summed across lanes by a shuffle network (31 shuffles per 32
// rows), the rest as above. by_rows needs whole vectors per row (S a multiple of 32). Tokens stream in blocks of up to tb through
// two slots (q, k, v, g, beta rows in by 2-D DMA, the block's outputs out); a block ends at every
// token whose state is kept (the last K), whose state is transposed into the slot's staging and
// leaves with the block's outputs. The state stays fp32 throughout: nothing can overflow fp16.
// A device group's members split the items in order (htp/ops/item-job.h): each item's outputs and
// states leave VTCM by DMA alone.
#pragma once

#include "proto/htp-eltwise.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-prepare.h"

#include <stdint.h>

namespace hexnpu::proto {

// ---- SSM_CONV

inline constexpr uint32_t HTP_SSM_CONV_MAX_TAPS   = 32;        // d_conv at most: c's rows turn in one transpose
inline constexpr uint32_t HTP_SSM_CONV_TIMES      = 32;        // output times per item at most
inline constexpr uint32_t HTP_SSM_CONV_X_BYTES    = 32 * 256;  // an item's sx rows: 32 channels x 64 columns
inline constexpr uint32_t HTP_SSM_CONV_C_BYTES    = 32 * 128;  // c's rows: 32 channels x 32 taps
inline constexpr uint32_t HTP_SSM_CONV_OUT_BYTES  = 32 * 128;  // the outputs: 32 times x 32 channels
inline constexpr uint32_t HTP_SSM_CONV_SLOT_BYTES = HTP_SSM_CONV_X_BYTES + HTP_SSM_CONV_C_BYTES + HTP_SSM_CONV_OUT_BYTES;
// Per thread after its two slots: sx turned (64 vectors), c turned (32), the transposes' scratch (64).
inline constexpr uint32_t HTP_SSM_CONV_SCRATCH_BYTES = (64 + 32 + 64) * 128;
inline constexpr uint32_t HTP_SSM_CONV_THREAD_BYTES  = 2 * HTP_SSM_CONV_SLOT_BYTES + HTP_SSM_CONV_SCRATCH_BYTES;

struct htp_ssm_conv_kparams {
    uint32_t       n_threads;
    uint32_t       items_per_thread;
    uint32_t       n_items;      // channel blocks x time blocks x sequences, channel blocks fastest
    uint32_t       tb;           // output times per item (the last block of a sequence may have fewer)
    fastdiv_values div_cblocks;  // item -> (channel block, rest)
    fastdiv_values div_tblocks;  // rest -> (time block, sequence)
    uint32_t       vtcm_size;    // n_threads * HTP_SSM_CONV_THREAD_BYTES
    uint32_t       by_rows;      // a few times: no turns, each channel's tap products summed across lanes
};
static_assert(sizeof(htp_ssm_conv_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// sx [d_conv - 1 + n_t, d_inner, n_s] and c [d_conv, d_inner] F32 with their rows' elements in order,
// dst [d_inner, n_t, n_s] F32 with rows apart.
constexpr bool htp_ssm_conv_layout_valid(const htp_tensor & sx, const htp_tensor & c, const htp_tensor & dst) {
    return sx.type == HTP_TYPE_F32 && c.type == HTP_TYPE_F32 && dst.type == HTP_TYPE_F32 && sx.ne[3] == 1 &&
           c.ne[2] == 1 && c.ne[3] == 1 && c.ne[0] >= 1 && c.ne[0] <= HTP_SSM_CONV_MAX_TAPS && c.ne[1] == sx.ne[1] &&
           dst.ne[0] == c.ne[1] && uint64_t(dst.ne[1]) + c.ne[0] - 1 == sx.ne[0] && dst.ne[2] == sx.ne[2] &&
           dst.ne[3] == 1 && htp_eltwise_source_rows_valid(sx) && htp_eltwise_source_rows_valid(c) &&
           htp_eltwise_rows_valid(dst, dst.ne[0] * 4);
}

inline htp_verdict prepare_ssm_conv_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    const htp_tensor & sx  = *a.src[0];
    const htp_tensor & c   = *a.src[1];
    const htp_tensor & dst = *a.dst;
    if (!htp_ssm_conv_layout_valid(sx, c, dst)) {
        return htp_refuse("the NPU SSM_CONV takes F32 sx [d_conv - 1 + n_t, d_inner, n_s] and c [d_conv <= 32, d_inner]");
    }
    if (dst.ne[0] == 0 || dst.ne[1] == 0 || dst.ne[2] == 0) {
        return htp_refuse("an empty convolution");
    }
    if (a.n_threads == 0 || a.n_threads > HTP_MAX_NTHREADS) {
        return htp_refuse("the session's thread count is out of range");
    }
    htp_ssm_conv_kparams kp{};
    kp.tb                  = dst.ne[1] < HTP_SSM_CONV_TIMES ? dst.ne[1] : HTP_SSM_CONV_TIMES;
    const uint32_t cblocks = (dst.ne[0] + 31) / 32;
    const uint32_t tblocks = (dst.ne[1] + kp.tb - 1) / kp.tb;
    const uint64_t items   = uint64_t(cblocks) * tblocks * dst.ne[2];
    if (items > UINT32_MAX) {
        return htp_refuse("more than 2^32 work items");
    }
    kp.n_items          = uint32_t(items);
    kp.div_cblocks      = init_fastdiv(cblocks);
    kp.div_tblocks      = init_fastdiv(tblocks);
    // As many threads as the session has, items and VTCM allow.
    const uint32_t fit = a.vtcm_size / HTP_SSM_CONV_THREAD_BYTES;
    if (fit == 0) {
        return htp_refuse(HTP_REFUSED_VTCM);
    }
    const htp_item_split split = htp_split_items(kp.n_items, a.n_threads < fit ? a.n_threads : fit);
    kp.n_threads               = split.n_threads;
    kp.items_per_thread        = split.per_thread;
    kp.vtcm_size = kp.n_threads * HTP_SSM_CONV_THREAD_BYTES;
    // Per time 31 shuffles and 32 rotations against 240 shuffles per item: up to 4 times.
    kp.by_rows = kp.tb <= 4 && kp.tb + c.ne[0] - 1 <= 32;
    return htp_store_kparams(HTP_TAKEN, kp, kparams);
}

// ---- GATED_DELTA_NET

inline constexpr uint32_t HTP_GDN_MAX_S         = 256;   // head size at most (a row of the state: 8 vectors)
inline constexpr uint32_t HTP_GDN_MAX_TOKENS    = 32;    // tokens per block at most
inline constexpr uint32_t HTP_GDN_SCRATCH_BYTES = 8192;  // the transposes' scratch: 64 vectors

// Where a work item (one head h and sequence s: item = s * H + h, H * n_seqs of them) finds its
// rows: GGML broadcasts q's and k's heads over v's tiled and their sequences blocked. Both kernels'.
struct htp_gdn_heads {
    fastdiv_values div_h;   // item -> (h, s)
    fastdiv_values div_hq;  // h -> q's head h % q.ne1
    fastdiv_values div_hk;  // ... k's
    fastdiv_values div_rq;  // s -> q's sequence s / (n_seqs / q.ne3)
    fastdiv_values div_rk;  // ... k's
};

inline htp_gdn_heads htp_gdn_heads_of(const htp_tensor & q, const htp_tensor & k, const htp_tensor & v) {
    return {init_fastdiv(v.ne[1]), init_fastdiv(q.ne[1]), init_fastdiv(k.ne[1]), init_fastdiv(v.ne[3] / q.ne[3]),
            init_fastdiv(v.ne[3] / k.ne[3])};
}

// The NPU's check of kparams' heads against the tensors (no division there: the fastdiv values').
constexpr bool htp_gdn_heads_valid(const htp_gdn_heads & d, const htp_tensor & q, const htp_tensor & k,
                                   const htp_tensor & v) {
    return d.div_h.d == v.ne[1] && d.div_hq.d == q.ne[1] && d.div_hk.d == k.ne[1] &&
           fastmodulo(v.ne[1], d.div_hq) == 0 && fastmodulo(v.ne[1], d.div_hk) == 0 &&
           uint64_t(d.div_rq.d) * q.ne[3] == v.ne[3] && uint64_t(d.div_rk.d) * k.ne[3] == v.ne[3];
}

// An item's byte offsets: token 0's row of q, k, v (add t * nb[2]), its g and beta elements (add
// t * H * elements), its output row in dst (add t * H * S * 4), and its state in the state tensor
// and in each kept state of dst. g_elems: g's elements per head and token (1, or S for KDA).
struct htp_gdn_item_offsets {
    uint32_t q, k, v, g, beta, out, state;
};
constexpr htp_gdn_item_offsets htp_gdn_item_at(const htp_gdn_heads & d, const htp_tensor & q, const htp_tensor & k,
                                               const htp_tensor & v, uint32_t item, uint32_t g_elems) {
    const uint32_t S = v.ne[0], H = v.ne[1], T = v.ne[2];
    const uint32_t s = fastdiv(item, d.div_h);
    const uint32_t h = item - s * H;
    return {fastdiv(s, d.div_rq) * q.nb[3] + fastmodulo(h, d.div_hq) * q.nb[1],
            fastdiv(s, d.div_rk) * k.nb[3] + fastmodulo(h, d.div_hk) * k.nb[1],
            s * v.nb[3] + h * v.nb[1],
            (s * T * H + h) * g_elems * 4,
            (s * T * H + h) * 4,
            (s * T * H + h) * S * 4,
            item * S * S * 4};
}

// Why the host refuses shapes both kernels share (nullptr: it does not).
inline const char * htp_gdn_shape_refusal(const htp_op_args & a) {
    const htp_tensor & q = *a.src[0];
    const htp_tensor & k = *a.src[1];
    const htp_tensor & v = *a.src[2];
    const uint32_t     S = v.ne[0], H = v.ne[1], T = v.ne[2], NS = v.ne[3];
    if (T == 0 || H == 0 || NS == 0) {
        return "no tokens or no heads";
    }
    if (H % q.ne[1] != 0 || H % k.ne[1] != 0 || NS % q.ne[3] != 0 || NS % k.ne[3] != 0) {
        return "q's or k's heads or sequences do not divide v's";
    }
    if (S > HTP_GDN_MAX_S) {
        return "a head size above 256";
    }
    if (a.n_threads == 0 || a.n_threads > HTP_MAX_NTHREADS) {
        return "the session's thread count is out of range";
    }
    if (uint64_t(S) * H * T * NS * 4 > UINT32_MAX) {
        return "more than 4 GiB of outputs";
    }
    return nullptr;
}

struct htp_gdn_kparams {
    uint32_t       n_threads;
    uint32_t       items_per_thread;  // items: H * n_seqs
    htp_gdn_heads  heads;
    uint32_t       S;                 // head size (v.ne0)
    uint32_t       tb;                // tokens per block at most
    uint32_t       K;                 // states kept (op_params 0)
    uint32_t       kda;               // g per key element (g.ne0 == S), else one per head and token
    uint32_t       scale;             // the bits of 1 / sqrt(S) (GGML's 1.0f / sqrtf(S))
    uint32_t       state_off;         // bytes of dst before the kept states: S H T n_seqs * 4
    uint32_t       slot_bytes;        // htp_gdn_slot_bytes
    uint32_t       vtcm_size;         // n_threads * htp_gdn_thread_bytes
    uint32_t       by_rows;           // the state in GGML's layout, each token's products summed per row
};
static_assert(sizeof(htp_gdn_kparams) <= HTP_OP_MAX_KERN_PARAMS * sizeof(int32_t));

// A row of the state or of a token's q, k, v in VTCM: S rounded up to whole vectors.
constexpr uint32_t htp_gdn_row_bytes(uint32_t S) { return (S + 31) / 32 * 128; }
// A slot: q, k, v rows (tb each), g (tb rows, or tb scalars), beta (tb scalars), the outputs (tb
// rows), the staging of a kept state (row_bytes / 4 rows, so its 32 x 32 blocks are whole).
struct htp_gdn_slot_layout {
    uint32_t q, k, v, g, beta, out, stage, bytes;
};
constexpr htp_gdn_slot_layout htp_gdn_slot(uint32_t S, uint32_t tb, bool kda) {
    const uint32_t      row     = htp_gdn_row_bytes(S);
    const uint32_t      scalars = (tb * 4 + 127) / 128 * 128;
    htp_gdn_slot_layout l{};
    l.q     = 0;
    l.k     = l.q + tb * row;
    l.v     = l.k + tb * row;
    l.g     = l.v + tb * row;
    l.beta  = l.g + (kda ? tb * row : scalars);
    l.out   = l.beta + scalars;
    l.stage = l.out + tb * row;
    l.bytes = l.stage + row / 4 * row;
    return l;
}
// A thread: the state (row_bytes / 4 rows), the scratch, two slots.
constexpr uint64_t htp_gdn_thread_bytes(uint32_t S, uint32_t slot_bytes) {
    return uint64_t(htp_gdn_row_bytes(S)) / 4 * htp_gdn_row_bytes(S) + HTP_GDN_SCRATCH_BYTES + 2 * uint64_t(slot_bytes);
}

// q, k [S, H_q|H_k, T, n_seqs'] and v [S, H, T, n_seqs] F32 with their rows' elements in order; g
// [1 or S, H, T, n_seqs], beta [1, H, T, n_seqs] and state [S, S, H, n_seqs] F32 contiguous; dst F32
// [S H, T n_seqs + K S n_seqs] contiguous.
constexpr bool htp_gdn_layout_valid(const htp_tensor & q, const htp_tensor & k, const htp_tensor & v,
                                    const htp_tensor & g, const htp_tensor & beta, const htp_tensor & state,
                                    const htp_tensor & dst, uint32_t K) {
    const uint32_t S = v.ne[0], H = v.ne[1], T = v.ne[2], NS = v.ne[3];
    auto contiguous = [](const htp_tensor & t) {
        return t.nb[0] == 4 && t.nb[1] == t.nb[0] * t.ne[0] && t.nb[2] == t.nb[1] * t.ne[1] &&
               t.nb[3] == t.nb[2] * t.ne[2] && uint64_t(t.nb[3]) * t.ne[3] <= t.size;
    };
    const bool types = q.type == HTP_TYPE_F32 && k.type == HTP_TYPE_F32 && v.type == HTP_TYPE_F32 &&
                       g.type == HTP_TYPE_F32 && beta.type == HTP_TYPE_F32 && state.type == HTP_TYPE_F32 &&
                       dst.type == HTP_TYPE_F32;
    // That q's and k's heads and sequences divide v's: the host checks with %, the NPU's guard with
    // the kparams' fastdiv values (no division there).
    const bool heads = q.ne[1] >= 1 && k.ne[1] >= 1 && q.ne[3] >= 1 && k.ne[3] >= 1;
    return types && heads && S >= 1 && q.ne[0] == S && k.ne[0] == S && q.ne[2] == T && k.ne[2] == T &&
           (g.ne[0] == 1 || g.ne[0] == S) && g.ne[1] == H && g.ne[2] == T && g.ne[3] == NS && beta.ne[0] == 1 &&
           beta.ne[1] == H && beta.ne[2] == T && beta.ne[3] == NS && state.ne[0] == S && state.ne[1] == S &&
           state.ne[2] == H && state.ne[3] == NS && K >= 1 && uint64_t(dst.ne[0]) == uint64_t(S) * H &&
           uint64_t(dst.ne[1]) == uint64_t(T) * NS + uint64_t(K) * S * NS && dst.ne[2] == 1 && dst.ne[3] == 1 &&
           htp_eltwise_source_rows_valid(q) && htp_eltwise_source_rows_valid(k) && htp_eltwise_source_rows_valid(v) &&
           contiguous(g) && contiguous(beta) && contiguous(state) && contiguous(dst);
}

inline htp_verdict prepare_gdn_op(const htp_op_args & a, int32_t kparams[HTP_OP_MAX_KERN_PARAMS]) {
    const htp_tensor & q = *a.src[0];
    const htp_tensor & k = *a.src[1];
    const htp_tensor & v = *a.src[2];
    const htp_tensor & g = *a.src[3];
    const int32_t      K = a.params[0];
    if (K < 1 || !htp_gdn_layout_valid(q, k, v, g, *a.src[4], *a.src[5], *a.dst, uint32_t(K))) {
        return htp_refuse("the NPU GATED_DELTA_NET takes F32 q, k, v with their rows in order, contiguous g, beta "
                          "and state of GGML's shapes, K >= 1");
    }
    if (const char * why = htp_gdn_shape_refusal(a)) {
        return htp_refuse(why);
    }
    const uint32_t  S = v.ne[0], H = v.ne[1], T = v.ne[2], NS = v.ne[3];
    const uint32_t  items = H * NS;  // below 2^32: the outputs are
    htp_gdn_kparams kp{};
    htp_item_split  split = htp_split_items(items, a.n_threads);
    kp.heads            = htp_gdn_heads_of(q, k, v);
    kp.S                = S;
    kp.K                = uint32_t(K);
    kp.kda              = g.ne[0] == S && S != 1;
    const float scale   = 1.0f / __builtin_sqrtf(float(S));
    kp.scale            = __builtin_bit_cast(uint32_t, scale);
    kp.state_off        = S * H * T * NS * 4;
    kp.tb               = T < HTP_GDN_MAX_TOKENS ? T : HTP_GDN_MAX_TOKENS;
    // Per block the turns take 2 (S/32)^2 x 80 shuffles, the row sums 2 (S/32) x 31 per token.
    kp.by_rows = S % 32 == 0 && uint64_t(T) * 31 < uint64_t(S / 32) * 80;
    for (;;) {
        kp.slot_bytes = htp_gdn_slot(S, kp.tb, kp.kda != 0).bytes;
        if (uint64_t(split.n_threads) * htp_gdn_thread_bytes(S, kp.slot_bytes) <= a.vtcm_size) {
            break;
        }
        if (kp.tb > 1) {
            kp.tb /= 2;
        } else if (split.n_threads > 1) {
            split = htp_split_items(uint32_t(items), split.n_threads - 1);
        } else {
            return htp_refuse(HTP_REFUSED_VTCM);
        }
    }
    kp.n_threads        = split.n_threads;
    kp.items_per_thread = split.per_thread;
    kp.vtcm_size        = uint32_t(uint64_t(kp.n_threads) * htp_gdn_thread_bytes(S, kp.slot_bytes));
    return htp_store_kparams(HTP_TAKEN, kp, kparams);
}

} // namespace hexnpu::proto
