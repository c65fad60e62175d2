// Vector predicates: compares (a word/halfword compare sets all 4/2 byte bits of its lane),
// predicate logic, vsetq, predicate <-> vector moves, select (vmux/vswap), conditional
// accumulate, carry chains, prefix sums, and masked stores.
// Semantics: QEMU ext.idef "Compare Vector with Vector", "Predicate Operations", vmux, vswap,
// vandqrt/vandvrt, CONDADDSUB, vaddcarry, vprefixq*, MMVEC_STQ; macros.h fCONDMASK*, fSETQBITS.
#pragma once

#include "vnpu/hvx/hvx-types.h"

namespace hexnpu::hvx::intrinsics {

using detail::Lanes;
using detail::lanes;
using detail::vector_of;

// ---- compares ------------------------------------------------------------------------------

namespace detail_pred {
// Byte mask of a lane-wise compare: every byte of a lane gets the lane's result.
template <class T, class F>
inline HVX_Vector compare_mask(HVX_Vector u, HVX_Vector v, F f) {
    return detail::map_lanes<T>(u, v, [f](T x, T y) { return f(x, y) ? T(-1) : T(0); });
}
} // namespace detail_pred

#define HEXNPU_HVX_COMPARE(OP, OPNAME, T, SUFFIX)                                                   \
    inline HVX_VectorPred Q6_Q_vcmp_##OPNAME##_V##SUFFIX##V##SUFFIX(HVX_Vector u, HVX_Vector v) {   \
        return HVX_VectorPred{detail_pred::compare_mask<T>(u, v, [](T x, T y) { return x OP y; })}; \
    }                                                                                               \
    inline HVX_VectorPred Q6_Q_vcmp_##OPNAME##and_QV##SUFFIX##V##SUFFIX(HVX_VectorPred q, HVX_Vector u, HVX_Vector v) { \
        return HVX_VectorPred{q.mask & Q6_Q_vcmp_##OPNAME##_V##SUFFIX##V##SUFFIX(u, v).mask};        \
    }                                                                                               \
    inline HVX_VectorPred Q6_Q_vcmp_##OPNAME##or_QV##SUFFIX##V##SUFFIX(HVX_VectorPred q, HVX_Vector u, HVX_Vector v) { \
        return HVX_VectorPred{q.mask | Q6_Q_vcmp_##OPNAME##_V##SUFFIX##V##SUFFIX(u, v).mask};        \
    }                                                                                               \
    inline HVX_VectorPred Q6_Q_vcmp_##OPNAME##xacc_QV##SUFFIX##V##SUFFIX(HVX_VectorPred q, HVX_Vector u, HVX_Vector v) { \
        return HVX_VectorPred{q.mask ^ Q6_Q_vcmp_##OPNAME##_V##SUFFIX##V##SUFFIX(u, v).mask};        \
    }
HEXNPU_HVX_COMPARE(==, eq, int8_t, b)
HEXNPU_HVX_COMPARE(==, eq, int16_t, h)
HEXNPU_HVX_COMPARE(==, eq, int32_t, w)
HEXNPU_HVX_COMPARE(>, gt, int8_t, b)
HEXNPU_HVX_COMPARE(>, gt, int16_t, h)
HEXNPU_HVX_COMPARE(>, gt, int32_t, w)
HEXNPU_HVX_COMPARE(>, gt, uint8_t, ub)
HEXNPU_HVX_COMPARE(>, gt, uint16_t, uh)
HEXNPU_HVX_COMPARE(>, gt, uint32_t, uw)
#undef HEXNPU_HVX_COMPARE

// ---- predicate logic (on the byte mask: bit set <=> byte 0xFF) -----------------------------

inline HVX_VectorPred Q6_Q_and_QQ(HVX_VectorPred s, HVX_VectorPred t) { return {s.mask & t.mask}; }
inline HVX_VectorPred Q6_Q_and_QQn(HVX_VectorPred s, HVX_VectorPred t) { return {s.mask & ~t.mask}; }
inline HVX_VectorPred Q6_Q_or_QQ(HVX_VectorPred s, HVX_VectorPred t) { return {s.mask | t.mask}; }
inline HVX_VectorPred Q6_Q_or_QQn(HVX_VectorPred s, HVX_VectorPred t) { return {s.mask | ~t.mask}; }
inline HVX_VectorPred Q6_Q_xor_QQ(HVX_VectorPred s, HVX_VectorPred t) { return {s.mask ^ t.mask}; }
inline HVX_VectorPred Q6_Q_not_Q(HVX_VectorPred s) { return {~s.mask}; }

// Bits [0, Rt & 127) set; vsetq2 sets [0, ((Rt - 1) & 127)], so a count of 128 means all lanes.
inline HVX_VectorPred Q6_Q_vsetq_R(int32_t rt) {
    const unsigned n = unsigned(rt) & 127;
    Lanes<uint8_t> m;
    for (unsigned i = 0; i < 128; ++i) m[i] = i < n ? 0xFF : 0x00;
    return {vector_of(m)};
}
inline HVX_VectorPred Q6_Q_vsetq2_R(int32_t rt) {
    const unsigned last = (unsigned(rt) - 1) & 127;
    Lanes<uint8_t> m;
    for (unsigned i = 0; i < 128; ++i) m[i] = i <= last ? 0xFF : 0x00;
    return {vector_of(m)};
}

// Narrow two predicates of wider lanes: bit i comes from Qt when (i & width) is clear, else from
// Qs bit i - width (width 1 for halfword -> byte, 2 for word -> halfword).
namespace detail_pred {
inline HVX_VectorPred shuffle_even(HVX_VectorPred s, HVX_VectorPred t, unsigned width) {
    const Lanes<uint8_t> qs = lanes<uint8_t>(s.mask), qt = lanes<uint8_t>(t.mask);
    Lanes<uint8_t> d;
    for (unsigned i = 0; i < 128; ++i) d[i] = (i & width) ? qs[i - width] : qt[i];
    return {vector_of(d)};
}
} // namespace detail_pred
inline HVX_VectorPred Q6_Qb_vshuffe_QhQh(HVX_VectorPred s, HVX_VectorPred t) { return detail_pred::shuffle_even(s, t, 1); }
inline HVX_VectorPred Q6_Qh_vshuffe_QwQw(HVX_VectorPred s, HVX_VectorPred t) { return detail_pred::shuffle_even(s, t, 2); }

// ---- predicate <-> vector ------------------------------------------------------------------

// Byte i = predicate bit i ? byte (i % 4) of Rt : 0 (the n-forms use the inverted bit).
inline HVX_Vector Q6_V_vand_QR(HVX_VectorPred q, int32_t rt) {
    HVX_Vector r;
    for (int i = 0; i < 32; ++i) r[i] = rt;
    return q.mask & r;
}
inline HVX_Vector Q6_V_vand_QnR(HVX_VectorPred q, int32_t rt) { return Q6_V_vand_QR(Q6_Q_not_Q(q), rt); }
inline HVX_Vector Q6_V_vandor_VQR(HVX_Vector x, HVX_VectorPred q, int32_t rt) { return x | Q6_V_vand_QR(q, rt); }
inline HVX_Vector Q6_V_vandor_VQnR(HVX_Vector x, HVX_VectorPred q, int32_t rt) { return x | Q6_V_vand_QnR(q, rt); }
// Predicate bit i = (Vu.ub[i] & byte (i % 4) of Rt) != 0.
inline HVX_VectorPred Q6_Q_vand_VR(HVX_Vector u, int32_t rt) {
    HVX_Vector r;
    for (int i = 0; i < 32; ++i) r[i] = rt;
    const HVX_Vector any = u & r;
    return {(HVX_Vector)((detail::VecU8)any != 0)};
}
inline HVX_VectorPred Q6_Q_vandor_QVR(HVX_VectorPred q, HVX_Vector u, int32_t rt) { return {q.mask | Q6_Q_vand_VR(u, rt).mask}; }
// Keep the bytes of Vu whose predicate bit is set (clear for the n-form).
inline HVX_Vector Q6_V_vand_QV(HVX_VectorPred q, HVX_Vector u) { return q.mask & u; }
inline HVX_Vector Q6_V_vand_QnV(HVX_VectorPred q, HVX_Vector u) { return ~q.mask & u; }

// ---- select --------------------------------------------------------------------------------

inline HVX_Vector Q6_V_vmux_QVV(HVX_VectorPred q, HVX_Vector u, HVX_Vector v) { return (q.mask & u) | (~q.mask & v); }
// lo = vmux(Q, Vu, Vv), hi = vmux(Q, Vv, Vu).
inline HVX_VectorPair Q6_W_vswap_QVV(HVX_VectorPred q, HVX_Vector u, HVX_Vector v) {
    return detail::pair_of(Q6_V_vmux_QVV(q, u, v), Q6_V_vmux_QVV(q, v, u));
}

// ---- conditional accumulate: the lane sum/difference is merged into Vx byte by byte, each
// byte under its own predicate bit (a halfword lane with mixed bits gets mixed bytes). ------

#define HEXNPU_HVX_CONDACC(T, SUFFIX)                                                              \
    inline HVX_Vector Q6_V##SUFFIX##_condacc_QV##SUFFIX##V##SUFFIX(HVX_VectorPred q, HVX_Vector x, HVX_Vector u) { \
        return Q6_V_vmux_QVV(q, (HVX_Vector)((T)x + (T)u), x);                                     \
    }                                                                                              \
    inline HVX_Vector Q6_V##SUFFIX##_condacc_QnV##SUFFIX##V##SUFFIX(HVX_VectorPred q, HVX_Vector x, HVX_Vector u) { \
        return Q6_V_vmux_QVV(q, x, (HVX_Vector)((T)x + (T)u));                                     \
    }                                                                                              \
    inline HVX_Vector Q6_V##SUFFIX##_condnac_QV##SUFFIX##V##SUFFIX(HVX_VectorPred q, HVX_Vector x, HVX_Vector u) { \
        return Q6_V_vmux_QVV(q, (HVX_Vector)((T)x - (T)u), x);                                     \
    }                                                                                              \
    inline HVX_Vector Q6_V##SUFFIX##_condnac_QnV##SUFFIX##V##SUFFIX(HVX_VectorPred q, HVX_Vector x, HVX_Vector u) { \
        return Q6_V_vmux_QVV(q, x, (HVX_Vector)((T)x - (T)u));                                     \
    }
HEXNPU_HVX_CONDACC(detail::VecU8, b)
HEXNPU_HVX_CONDACC(detail::VecU16, h)
HEXNPU_HVX_CONDACC(detail::VecU32, w)
#undef HEXNPU_HVX_CONDACC

// ---- carry chains: the carry in is predicate bit 4i of word i; the carry out sets all four
// bits of the word. vsub computes u + ~v + carry (a set carry means "no borrow"). ----------

namespace detail_pred {
inline HVX_Vector add_with_carry(HVX_Vector u, HVX_Vector v, HVX_VectorPred *q, bool subtract) {
    const Lanes<uint32_t> x = lanes<uint32_t>(u), y = lanes<uint32_t>(v);
    Lanes<uint32_t> carry = lanes<uint32_t>(q->mask), d;
    for (int i = 0; i < 32; ++i) {
        const uint64_t sum = uint64_t(x[i]) + (subtract ? uint32_t(~y[i]) : y[i]) + (carry[i] & 1);
        d[i] = uint32_t(sum);
        carry[i] = (sum >> 32) ? 0xFFFFFFFFu : 0u;
    }
    q->mask = vector_of(carry);
    return vector_of(d);
}
} // namespace detail_pred

inline HVX_Vector Q6_Vw_vadd_VwVwQ_carry(HVX_Vector u, HVX_Vector v, HVX_VectorPred *qx) { return detail_pred::add_with_carry(u, v, qx, false); }
inline HVX_Vector Q6_Vw_vsub_VwVwQ_carry(HVX_Vector u, HVX_Vector v, HVX_VectorPred *qx) { return detail_pred::add_with_carry(u, v, qx, true); }
inline HVX_Vector Q6_Vw_vadd_VwVwQ_carry_sat(HVX_Vector u, HVX_Vector v, HVX_VectorPred qs) {
    const Lanes<int32_t> x = lanes<int32_t>(u), y = lanes<int32_t>(v);
    const Lanes<uint32_t> carry = lanes<uint32_t>(qs.mask);
    Lanes<int32_t> d;
    for (int i = 0; i < 32; ++i) d[i] = detail::saturate<int32_t>(int64_t(x[i]) + y[i] + (carry[i] & 1));
    return vector_of(d);
}

// ---- prefix sums of predicate bits ---------------------------------------------------------

// Lane j counts the set bits 0 .. (j + 1) * lane bytes - 1.
namespace detail_pred {
template <class T>
inline HVX_Vector prefix_sum(HVX_VectorPred q) {
    const Lanes<uint8_t> bits = lanes<uint8_t>(q.mask);
    Lanes<T> d;
    T count = 0;
    for (int j = 0; j < Lanes<T>::count; ++j) {
        for (unsigned k = 0; k < sizeof(T); ++k) count = T(count + (bits[j * sizeof(T) + k] & 1));
        d[j] = count;
    }
    return vector_of(d);
}
} // namespace detail_pred

inline HVX_Vector Q6_Vb_prefixsum_Q(HVX_VectorPred q) { return detail_pred::prefix_sum<uint8_t>(q); }
inline HVX_Vector Q6_Vh_prefixsum_Q(HVX_VectorPred q) { return detail_pred::prefix_sum<uint16_t>(q); }
inline HVX_Vector Q6_Vw_prefixsum_Q(HVX_VectorPred q) { return detail_pred::prefix_sum<uint32_t>(q); }

// ---- masked aligned stores: write the bytes of Vs whose bit is set (clear for Qn) ----------
// Like vmem on the device, the address is rounded down to a 128-byte boundary.

namespace detail_pred {
inline void masked_store(HVX_Vector mask, HVX_Vector *rt, HVX_Vector vs) {
    auto *dst = reinterpret_cast<uint8_t *>(reinterpret_cast<uintptr_t>(rt) & ~uintptr_t(127));
    const Lanes<uint8_t> m = lanes<uint8_t>(mask), src = lanes<uint8_t>(vs);
    for (int i = 0; i < 128; ++i)
        if (m[i]) dst[i] = src[i];
}
} // namespace detail_pred

inline void Q6_vmem_QRIV(HVX_VectorPred q, HVX_Vector *rt, HVX_Vector vs) { detail_pred::masked_store(q.mask, rt, vs); }
inline void Q6_vmem_QnRIV(HVX_VectorPred q, HVX_Vector *rt, HVX_Vector vs) { detail_pred::masked_store(~q.mask, rt, vs); }
// The :nt (non-temporal) forms differ only in cache policy.
inline void Q6_vmem_QRIV_nt(HVX_VectorPred q, HVX_Vector *rt, HVX_Vector vs) { detail_pred::masked_store(q.mask, rt, vs); }
inline void Q6_vmem_QnRIV_nt(HVX_VectorPred q, HVX_Vector *rt, HVX_Vector vs) { detail_pred::masked_store(~q.mask, rt, vs); }

} // namespace hexnpu::hvx::intrinsics
