// Element-wise HVX intrinsics (hvx-arith.h, hvx-shift.h) against scalar references written from
// the instruction semantics (QEMU ext.idef / macros.h), on boundary and random inputs.
#include "test-hvx-support.h"

using namespace hvx_test;

namespace {

int64_t clz_ref(uint64_t x, int bits) {
    int n = 0;
    for (int b = bits - 1; b >= 0 && !((x >> b) & 1); --b) ++n;
    return n;
}
// Longest run of leading bits equal to the sign bit.
int64_t cls_ref(int64_t x, int bits) {
    const uint64_t mask = bits == 64 ? ~0ull : (1ull << bits) - 1;
    return std::max(clz_ref(uint64_t(x) & mask, bits), clz_ref(~uint64_t(x) & mask, bits));
}

// Pair operations that act on each register separately.
template <class F>
auto per_register(F f) {
    return [=](const PairBytes &u, const PairBytes &v) { return join(f(lo_of(u), lo_of(v)), f(hi_of(u), hi_of(v))); };
}

} // namespace

TEST(HvxArith, SplatsZeroAndMoves) {
    HVX_CHECK(Q6_V_vsplat_R, [](int32_t r) { Bytes d; for (int i = 0; i < 32; ++i) put(d, 4, i, r); return d; });
    HVX_CHECK(Q6_Vh_vsplat_R, [](int32_t r) { Bytes d; for (int i = 0; i < 64; ++i) put(d, 2, i, r); return d; });
    HVX_CHECK(Q6_Vb_vsplat_R, [](int32_t r) { Bytes d; d.fill(uint8_t(r)); return d; });
    EXPECT_EQ(bytes_of(Q6_V_vzero()), Bytes{});
    EXPECT_EQ(bytes_of(Q6_W_vzero()), PairBytes{});
    HVX_CHECK(Q6_V_equals_V, [](const Bytes &u) { return u; });
    HVX_CHECK(Q6_W_equals_W, [](const PairBytes &u) { return u; });
    HVX_CHECK(Q6_V_lo_W, [](const PairBytes &w) { return lo_of(w); });
    HVX_CHECK(Q6_V_hi_W, [](const PairBytes &w) { return hi_of(w); });
    HVX_CHECK(Q6_W_vcombine_VV, [](const Bytes &u, const Bytes &v) { return join(v, u); });
    HVX_CHECK(Q6_R_vextract_VR, [](const Bytes &u, int32_t r) { return int32_t(get(u, 4, true, (uint32_t(r) % 128) / 4)); });
    HVX_CHECK(Q6_Vw_vinsert_VwR, [](Bytes x, int32_t r) { put(x, 4, 0, r); return x; });
}

TEST(HvxArith, Logic) {
    HVX_CHECK(Q6_V_vand_VV, lanes2(1, false, false, [](int64_t a, int64_t b) { return a & b; }));
    HVX_CHECK(Q6_V_vor_VV, lanes2(1, false, false, [](int64_t a, int64_t b) { return a | b; }));
    HVX_CHECK(Q6_V_vxor_VV, lanes2(1, false, false, [](int64_t a, int64_t b) { return a ^ b; }));
    HVX_CHECK(Q6_V_vnot_V, lanes1(1, false, 1, [](int64_t a) { return 255 - a; }));
}

TEST(HvxArith, AddSubWrapAndSaturate) {
    const auto add = [](int64_t a, int64_t b) { return a + b; };
    const auto sub = [](int64_t a, int64_t b) { return a - b; };
    HVX_CHECK(Q6_Vb_vadd_VbVb, lanes2(1, true, true, add));
    HVX_CHECK(Q6_Vh_vadd_VhVh, lanes2(2, true, true, add));
    HVX_CHECK(Q6_Vw_vadd_VwVw, lanes2(4, true, true, add));
    HVX_CHECK(Q6_Vb_vsub_VbVb, lanes2(1, true, true, sub));
    HVX_CHECK(Q6_Vh_vsub_VhVh, lanes2(2, true, true, sub));
    HVX_CHECK(Q6_Vw_vsub_VwVw, lanes2(4, true, true, sub));
#define SAT_CASE(FN, W, S, OP) HVX_CHECK(FN, lanes2(W, S, S, [](int64_t a, int64_t b) { return sat(a OP b, W, S); }))
    SAT_CASE(Q6_Vub_vadd_VubVub_sat, 1, false, +);
    SAT_CASE(Q6_Vuh_vadd_VuhVuh_sat, 2, false, +);
    SAT_CASE(Q6_Vuw_vadd_VuwVuw_sat, 4, false, +);
    SAT_CASE(Q6_Vb_vadd_VbVb_sat, 1, true, +);
    SAT_CASE(Q6_Vh_vadd_VhVh_sat, 2, true, +);
    SAT_CASE(Q6_Vw_vadd_VwVw_sat, 4, true, +);
    SAT_CASE(Q6_Vub_vsub_VubVub_sat, 1, false, -);
    SAT_CASE(Q6_Vuh_vsub_VuhVuh_sat, 2, false, -);
    SAT_CASE(Q6_Vuw_vsub_VuwVuw_sat, 4, false, -);
    SAT_CASE(Q6_Vb_vsub_VbVb_sat, 1, true, -);
    SAT_CASE(Q6_Vh_vsub_VhVh_sat, 2, true, -);
    SAT_CASE(Q6_Vw_vsub_VwVw_sat, 4, true, -);
#undef SAT_CASE
    HVX_CHECK(Q6_Vub_vadd_VubVb_sat, lanes2(1, false, true, [](int64_t a, int64_t b) { return sat(a + b, 1, false); }));
    HVX_CHECK(Q6_Vub_vsub_VubVb_sat, lanes2(1, false, true, [](int64_t a, int64_t b) { return sat(a - b, 1, false); }));
    // Pair forms.
    HVX_CHECK(Q6_Wb_vadd_WbWb, per_register(lanes2(1, true, true, add)));
    HVX_CHECK(Q6_Wh_vadd_WhWh, per_register(lanes2(2, true, true, add)));
    HVX_CHECK(Q6_Ww_vadd_WwWw, per_register(lanes2(4, true, true, add)));
    HVX_CHECK(Q6_Wb_vsub_WbWb, per_register(lanes2(1, true, true, sub)));
    HVX_CHECK(Q6_Wh_vsub_WhWh, per_register(lanes2(2, true, true, sub)));
    HVX_CHECK(Q6_Ww_vsub_WwWw, per_register(lanes2(4, true, true, sub)));
#define PAIR_SAT_CASE(FN, W, S, OP) HVX_CHECK(FN, per_register(lanes2(W, S, S, [](int64_t a, int64_t b) { return sat(a OP b, W, S); })))
    PAIR_SAT_CASE(Q6_Wub_vadd_WubWub_sat, 1, false, +);
    PAIR_SAT_CASE(Q6_Wuh_vadd_WuhWuh_sat, 2, false, +);
    PAIR_SAT_CASE(Q6_Wuw_vadd_WuwWuw_sat, 4, false, +);
    PAIR_SAT_CASE(Q6_Wb_vadd_WbWb_sat, 1, true, +);
    PAIR_SAT_CASE(Q6_Wh_vadd_WhWh_sat, 2, true, +);
    PAIR_SAT_CASE(Q6_Ww_vadd_WwWw_sat, 4, true, +);
    PAIR_SAT_CASE(Q6_Wub_vsub_WubWub_sat, 1, false, -);
    PAIR_SAT_CASE(Q6_Wuh_vsub_WuhWuh_sat, 2, false, -);
    PAIR_SAT_CASE(Q6_Wuw_vsub_WuwWuw_sat, 4, false, -);
    PAIR_SAT_CASE(Q6_Wb_vsub_WbWb_sat, 1, true, -);
    PAIR_SAT_CASE(Q6_Wh_vsub_WhWh_sat, 2, true, -);
    PAIR_SAT_CASE(Q6_Ww_vsub_WwWw_sat, 4, true, -);
#undef PAIR_SAT_CASE
}

TEST(HvxArith, WideningAddSub) {
    // Lane 2i of the sources -> lane i of the low register, lane 2i+1 -> lane i of the high one.
    const auto widen = [](int w, bool s, int sign) {
        return [=](const Bytes &u, const Bytes &v) {
            Bytes lo{}, hi{};
            for (int i = 0; i < 64 / w; ++i) {
                put(lo, 2 * w, i, get(u, w, s, 2 * i) + sign * get(v, w, s, 2 * i));
                put(hi, 2 * w, i, get(u, w, s, 2 * i + 1) + sign * get(v, w, s, 2 * i + 1));
            }
            return join(lo, hi);
        };
    };
    HVX_CHECK(Q6_Wh_vadd_VubVub, widen(1, false, 1));
    HVX_CHECK(Q6_Wh_vsub_VubVub, widen(1, false, -1));
    HVX_CHECK(Q6_Ww_vadd_VhVh, widen(2, true, 1));
    HVX_CHECK(Q6_Ww_vsub_VhVh, widen(2, true, -1));
    HVX_CHECK(Q6_Ww_vadd_VuhVuh, widen(2, false, 1));
    HVX_CHECK(Q6_Ww_vsub_VuhVuh, widen(2, false, -1));
    const auto widen_acc = [widen](int w, bool s) {
        return [=](const PairBytes &acc, const Bytes &u, const Bytes &v) {
            const PairBytes sum = widen(w, s, 1)(u, v);
            PairBytes d{};
            for (int i = 0; i < 256 / (2 * w); ++i)
                put(d.data(), 2 * w, i, get(acc.data(), 2 * w, true, i) + get(sum.data(), 2 * w, true, i));
            return d;
        };
    };
    HVX_CHECK(Q6_Wh_vaddacc_WhVubVub, widen_acc(1, false));
    HVX_CHECK(Q6_Ww_vaddacc_WwVhVh, widen_acc(2, true));
    HVX_CHECK(Q6_Ww_vaddacc_WwVuhVuh, widen_acc(2, false));
}

TEST(HvxArith, MinMaxAverages) {
    const auto mx = [](int64_t a, int64_t b) { return a > b ? a : b; };
    const auto mn = [](int64_t a, int64_t b) { return a < b ? a : b; };
    HVX_CHECK(Q6_Vb_vmax_VbVb, lanes2(1, true, true, mx));
    HVX_CHECK(Q6_Vub_vmax_VubVub, lanes2(1, false, false, mx));
    HVX_CHECK(Q6_Vh_vmax_VhVh, lanes2(2, true, true, mx));
    HVX_CHECK(Q6_Vuh_vmax_VuhVuh, lanes2(2, false, false, mx));
    HVX_CHECK(Q6_Vw_vmax_VwVw, lanes2(4, true, true, mx));
    HVX_CHECK(Q6_Vb_vmin_VbVb, lanes2(1, true, true, mn));
    HVX_CHECK(Q6_Vub_vmin_VubVub, lanes2(1, false, false, mn));
    HVX_CHECK(Q6_Vh_vmin_VhVh, lanes2(2, true, true, mn));
    HVX_CHECK(Q6_Vuh_vmin_VuhVuh, lanes2(2, false, false, mn));
    HVX_CHECK(Q6_Vw_vmin_VwVw, lanes2(4, true, true, mn));
    // floor((a + b) / 2), floor((a + b + 1) / 2), floor((a - b) / 2) of the exact values.
    const auto avg = [](int64_t a, int64_t b) { return (a + b) >> 1; };
    const auto avg_rnd = [](int64_t a, int64_t b) { return (a + b + 1) >> 1; };
    const auto navg = [](int64_t a, int64_t b) { return (a - b) >> 1; };
    HVX_CHECK(Q6_Vb_vavg_VbVb, lanes2(1, true, true, avg));
    HVX_CHECK(Q6_Vub_vavg_VubVub, lanes2(1, false, false, avg));
    HVX_CHECK(Q6_Vh_vavg_VhVh, lanes2(2, true, true, avg));
    HVX_CHECK(Q6_Vuh_vavg_VuhVuh, lanes2(2, false, false, avg));
    HVX_CHECK(Q6_Vw_vavg_VwVw, lanes2(4, true, true, avg));
    HVX_CHECK(Q6_Vuw_vavg_VuwVuw, lanes2(4, false, false, avg));
    HVX_CHECK(Q6_Vb_vavg_VbVb_rnd, lanes2(1, true, true, avg_rnd));
    HVX_CHECK(Q6_Vub_vavg_VubVub_rnd, lanes2(1, false, false, avg_rnd));
    HVX_CHECK(Q6_Vh_vavg_VhVh_rnd, lanes2(2, true, true, avg_rnd));
    HVX_CHECK(Q6_Vuh_vavg_VuhVuh_rnd, lanes2(2, false, false, avg_rnd));
    HVX_CHECK(Q6_Vw_vavg_VwVw_rnd, lanes2(4, true, true, avg_rnd));
    HVX_CHECK(Q6_Vuw_vavg_VuwVuw_rnd, lanes2(4, false, false, avg_rnd));
    HVX_CHECK(Q6_Vb_vnavg_VbVb, lanes2(1, true, true, navg));
    HVX_CHECK(Q6_Vh_vnavg_VhVh, lanes2(2, true, true, navg));
    HVX_CHECK(Q6_Vw_vnavg_VwVw, lanes2(4, true, true, navg));
    HVX_CHECK(Q6_Vb_vnavg_VubVub, lanes2(1, false, false, navg));
}

TEST(HvxArith, AbsoluteValuesAndDifferences) {
    const auto abs = [](int64_t a) { return a < 0 ? -a : a; };
    HVX_CHECK(Q6_Vb_vabs_Vb, lanes1(1, true, 1, abs));
    HVX_CHECK(Q6_Vh_vabs_Vh, lanes1(2, true, 2, abs));
    HVX_CHECK(Q6_Vw_vabs_Vw, lanes1(4, true, 4, abs));
    HVX_CHECK(Q6_Vb_vabs_Vb_sat, lanes1(1, true, 1, [](int64_t a) { return sat(a < 0 ? -a : a, 1, true); }));
    HVX_CHECK(Q6_Vh_vabs_Vh_sat, lanes1(2, true, 2, [](int64_t a) { return sat(a < 0 ? -a : a, 2, true); }));
    HVX_CHECK(Q6_Vw_vabs_Vw_sat, lanes1(4, true, 4, [](int64_t a) { return sat(a < 0 ? -a : a, 4, true); }));
    const auto absdiff = [](int64_t a, int64_t b) { return a > b ? a - b : b - a; };
    HVX_CHECK(Q6_Vub_vabsdiff_VubVub, lanes2(1, false, false, absdiff));
    HVX_CHECK(Q6_Vuh_vabsdiff_VuhVuh, lanes2(2, false, false, absdiff));
    HVX_CHECK(Q6_Vuh_vabsdiff_VhVh, lanes2(2, true, true, absdiff));
    HVX_CHECK(Q6_Vuw_vabsdiff_VwVw, lanes2(4, true, true, absdiff));
    // Known answers at the edges: |min| wraps without :sat.
    EXPECT_EQ(Q6_Vh_vabs_Vh(Q6_Vh_vsplat_R(0x8000))[0], int32_t(0x80008000u));
    EXPECT_EQ(Q6_Vh_vabs_Vh_sat(Q6_Vh_vsplat_R(0x8000))[0], 0x7FFF7FFF);
}

TEST(HvxArith, BitCounts) {
    HVX_CHECK(Q6_Vuh_vcl0_Vuh, lanes1(2, false, 2, [](int64_t a) { return clz_ref(uint64_t(a), 16); }));
    HVX_CHECK(Q6_Vuw_vcl0_Vuw, lanes1(4, false, 4, [](int64_t a) { return clz_ref(uint64_t(a), 32); }));
    HVX_CHECK(Q6_Vh_vnormamt_Vh, lanes1(2, true, 2, [](int64_t a) { return cls_ref(a, 16) - 1; }));
    HVX_CHECK(Q6_Vw_vnormamt_Vw, lanes1(4, true, 4, [](int64_t a) { return cls_ref(a, 32) - 1; }));
    HVX_CHECK(Q6_Vh_vadd_vclb_VhVh, lanes2(2, true, true, [](int64_t a, int64_t b) { return cls_ref(a, 16) + b; }));
    HVX_CHECK(Q6_Vw_vadd_vclb_VwVw, lanes2(4, true, true, [](int64_t a, int64_t b) { return cls_ref(a, 32) + b; }));
    HVX_CHECK(Q6_Vh_vpopcount_Vh, lanes1(2, false, 2, [](int64_t a) {
        int64_t n = 0;
        for (; a; a >>= 1) n += a & 1;
        return n;
    }));
}

TEST(HvxShift, ByScalarMasksTheCount) {
    HVX_CHECK(Q6_Vh_vasl_VhR, lanes_scalar(2, true, [](int64_t a, int32_t r, int) { return a * (int64_t(1) << (r & 15)); }));
    HVX_CHECK(Q6_Vw_vasl_VwR, lanes_scalar(4, true, [](int64_t a, int32_t r, int) { return a * (int64_t(1) << (r & 31)); }));
    HVX_CHECK(Q6_Vh_vasr_VhR, lanes_scalar(2, true, [](int64_t a, int32_t r, int) { return a >> (r & 15); }));
    HVX_CHECK(Q6_Vw_vasr_VwR, lanes_scalar(4, true, [](int64_t a, int32_t r, int) { return a >> (r & 31); }));
    HVX_CHECK(Q6_Vub_vlsr_VubR, lanes_scalar(1, false, [](int64_t a, int32_t r, int) { return a >> (r & 7); }));
    HVX_CHECK(Q6_Vuh_vlsr_VuhR, lanes_scalar(2, false, [](int64_t a, int32_t r, int) { return a >> (r & 15); }));
    HVX_CHECK(Q6_Vuw_vlsr_VuwR, lanes_scalar(4, false, [](int64_t a, int32_t r, int) { return a >> (r & 31); }));
    const auto acc = [](int w, bool left) {
        return [=](const Bytes &x, const Bytes &u, int32_t r) {
            Bytes d{};
            const int s = r & (8 * w - 1);
            for (int i = 0; i < 128 / w; ++i) {
                const int64_t a = get(u, w, true, i);
                put(d, w, i, get(x, w, true, i) + (left ? a * (int64_t(1) << s) : a >> s));
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Vw_vaslacc_VwVwR, acc(4, true));
    HVX_CHECK(Q6_Vw_vasracc_VwVwR, acc(4, false));
    HVX_CHECK(Q6_Vh_vaslacc_VhVhR, acc(2, true));
    HVX_CHECK(Q6_Vh_vasracc_VhVhR, acc(2, false));
}

TEST(HvxShift, ByVectorUsesASignedCount) {
    // Count: the low log2(bits)+1 bits of the Vv lane as a signed number; negative reverses.
    const auto by_vector = [](int w, bool s, bool left) {
        return [=](const Bytes &u, const Bytes &v) {
            Bytes d{};
            const int field = w == 4 ? 6 : 5;
            for (int i = 0; i < 128 / w; ++i) {
                int64_t c = get(v, w, false, i) & ((1 << field) - 1);
                if (c >= (1 << (field - 1))) c -= 1 << field;
                if (left) c = -c; // a left shift by c is a right shift by -c
                const int64_t a = get(u, w, s, i);
                put(d, w, i, c >= 0 ? a >> c : a * (int64_t(1) << -c));
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Vh_vasr_VhVh, by_vector(2, true, false));
    HVX_CHECK(Q6_Vw_vasr_VwVw, by_vector(4, true, false));
    HVX_CHECK(Q6_Vh_vlsr_VhVh, by_vector(2, false, false));
    HVX_CHECK(Q6_Vw_vlsr_VwVw, by_vector(4, false, false));
    HVX_CHECK(Q6_Vh_vasl_VhVh, by_vector(2, true, true));
    HVX_CHECK(Q6_Vw_vasl_VwVw, by_vector(4, true, true));
    HVX_CHECK(Q6_Vuw_vrotr_VuwVuw, lanes2(4, false, false, [](int64_t a, int64_t b) {
        const int s = int(b & 31);
        return int64_t(((uint64_t(a) << 32 | uint64_t(a)) >> s) & 0xFFFFFFFFu);
    }));
    HVX_CHECK(Q6_Vw_vsatdw_VwVw, lanes2(4, true, false, [](int64_t hi, int64_t lo) { return sat(hi * (int64_t(1) << 32) + lo, 4, true); }));
}

TEST(HvxShift, NarrowingShiftRoundSaturate) {
    // Wide lane i of Vv -> narrow lane 2i, of Vu -> narrow lane 2i+1.
    const auto narrow = [](int w, bool s_in, int mask, bool rnd, int sat_mode /*0 none, 1 signed, 2 unsigned*/) {
        return [=](const Bytes &u, const Bytes &v, int32_t r) {
            const int sh = r & mask;
            Bytes d{};
            for (int i = 0; i < 128 / w; ++i) {
                for (int part = 0; part < 2; ++part) {
                    int64_t x = get(part ? u : v, w, s_in, i);
                    if (rnd && sh > 0) x += int64_t(1) << (sh - 1);
                    x >>= sh;
                    if (sat_mode) x = sat(x, w / 2, sat_mode == 1);
                    put(d, w / 2, 2 * i + part, x);
                }
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Vh_vasr_VwVwR, narrow(4, true, 15, false, 0));
    HVX_CHECK(Q6_Vh_vasr_VwVwR_sat, narrow(4, true, 15, false, 1));
    HVX_CHECK(Q6_Vh_vasr_VwVwR_rnd_sat, narrow(4, true, 15, true, 1));
    HVX_CHECK(Q6_Vuh_vasr_VwVwR_sat, narrow(4, true, 15, false, 2));
    HVX_CHECK(Q6_Vuh_vasr_VwVwR_rnd_sat, narrow(4, true, 15, true, 2));
    HVX_CHECK(Q6_Vuh_vasr_VuwVuwR_sat, narrow(4, false, 15, false, 2));
    HVX_CHECK(Q6_Vuh_vasr_VuwVuwR_rnd_sat, narrow(4, false, 15, true, 2));
    HVX_CHECK(Q6_Vub_vasr_VhVhR_sat, narrow(2, true, 7, false, 2));
    HVX_CHECK(Q6_Vub_vasr_VhVhR_rnd_sat, narrow(2, true, 7, true, 2));
    HVX_CHECK(Q6_Vb_vasr_VhVhR_sat, narrow(2, true, 7, false, 1));
    HVX_CHECK(Q6_Vb_vasr_VhVhR_rnd_sat, narrow(2, true, 7, true, 1));
    HVX_CHECK(Q6_Vub_vasr_VuhVuhR_sat, narrow(2, false, 7, false, 2));
    HVX_CHECK(Q6_Vub_vasr_VuhVuhR_rnd_sat, narrow(2, false, 7, true, 2));
    // vround: add half of the dropped half-width, shift by it, saturate; vsat: saturate only.
    const auto round_or_sat = [](int w, bool s_in, bool s_out, bool round) {
        return [=](const Bytes &u, const Bytes &v) {
            const int half_bits = 4 * w;
            Bytes d{};
            for (int i = 0; i < 128 / w; ++i)
                for (int part = 0; part < 2; ++part) {
                    int64_t x = get(part ? u : v, w, s_in, i);
                    if (round) x = (x + (int64_t(1) << (half_bits - 1))) >> half_bits;
                    put(d, w / 2, 2 * i + part, sat(x, w / 2, s_out));
                }
            return d;
        };
    };
    HVX_CHECK(Q6_Vh_vround_VwVw_sat, round_or_sat(4, true, true, true));
    HVX_CHECK(Q6_Vuh_vround_VwVw_sat, round_or_sat(4, true, false, true));
    HVX_CHECK(Q6_Vuh_vround_VuwVuw_sat, round_or_sat(4, false, false, true));
    HVX_CHECK(Q6_Vb_vround_VhVh_sat, round_or_sat(2, true, true, true));
    HVX_CHECK(Q6_Vub_vround_VhVh_sat, round_or_sat(2, true, false, true));
    HVX_CHECK(Q6_Vub_vround_VuhVuh_sat, round_or_sat(2, false, false, true));
    HVX_CHECK(Q6_Vub_vsat_VhVh, round_or_sat(2, true, false, false));
    HVX_CHECK(Q6_Vh_vsat_VwVw, round_or_sat(4, true, true, false));
    HVX_CHECK(Q6_Vuh_vsat_VuwVuw, round_or_sat(4, false, false, false));
}
