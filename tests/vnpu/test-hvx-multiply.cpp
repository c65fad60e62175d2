// Multiply intrinsics (hvx-multiply.h, hvx-vrmpy.h) against scalar references written from the
// instruction semantics, and the SIMD fast paths against the portable element loops.
#include "test-hvx-support.h"

using namespace hvx_test;

namespace {

// Widening vector x vector: lane 2i -> low register lane i, lane 2i+1 -> high register lane i.
auto widen_vv(int w, bool su, bool sv, bool acc) {
    return [=](const PairBytes &x, const Bytes &u, const Bytes &v) {
        PairBytes d{};
        for (int j = 0; j < 128 / w; ++j) {
            const int reg = j % 2, lane = j / 2;
            const int64_t prev = acc ? get(x.data() + 128 * reg, 2 * w, false, lane) : 0;
            put(d.data() + 128 * reg, 2 * w, lane, prev + get(u, w, su, j) * get(v, w, sv, j));
        }
        return d;
    };
}
// Widening vector x scalar: lane j uses byte (j % 4) or halfword (j % 2) of Rt.
auto widen_vr(int w, bool su, bool sr, bool acc) {
    return [=](const PairBytes &x, const Bytes &u, int32_t r) {
        PairBytes d{};
        for (int j = 0; j < 128 / w; ++j) {
            const int reg = j % 2, lane = j / 2;
            const int64_t c = w == 1 ? (sr ? sbyte(r, j % 4) : ubyte(r, j % 4)) : (sr ? shalf(r, j % 2) : uhalf(r, j % 2));
            const int64_t prev = acc ? get(x.data() + 128 * reg, 2 * w, false, lane) : 0;
            put(d.data() + 128 * reg, 2 * w, lane, prev + get(u, w, su, j) * c);
        }
        return d;
    };
}
template <class F>
auto no_acc_vv(F f) { return [=](const Bytes &u, const Bytes &v) { return f(PairBytes{}, u, v); }; }
template <class F>
auto no_acc_vr(F f) { return [=](const Bytes &u, int32_t r) { return f(PairBytes{}, u, r); }; }

// 4-byte dot product per word.
auto vrmpy_ref(bool su, bool sv) {
    return [=](const Bytes &x, const Bytes &u, const Bytes &v) {
        Bytes d{};
        for (int i = 0; i < 32; ++i) {
            int64_t s = get(x, 4, true, i);
            for (int k = 0; k < 4; ++k) s += get(u, 1, su, 4 * i + k) * get(v, 1, sv, 4 * i + k);
            put(d, 4, i, s);
        }
        return d;
    };
}
Bytes splat_word(int32_t r) {
    Bytes b;
    for (int i = 0; i < 32; ++i) put(b, 4, i, r);
    return b;
}

} // namespace

TEST(HvxMultiply, WideningVectorByVector) {
    HVX_CHECK(Q6_Wh_vmpy_VubVb, no_acc_vv(widen_vv(1, false, true, false)));
    HVX_CHECK(Q6_Wh_vmpyacc_WhVubVb, widen_vv(1, false, true, true));
    HVX_CHECK(Q6_Wh_vmpy_VbVb, no_acc_vv(widen_vv(1, true, true, false)));
    HVX_CHECK(Q6_Wh_vmpyacc_WhVbVb, widen_vv(1, true, true, true));
    HVX_CHECK(Q6_Wuh_vmpy_VubVub, no_acc_vv(widen_vv(1, false, false, false)));
    HVX_CHECK(Q6_Wuh_vmpyacc_WuhVubVub, widen_vv(1, false, false, true));
    HVX_CHECK(Q6_Ww_vmpy_VhVh, no_acc_vv(widen_vv(2, true, true, false)));
    HVX_CHECK(Q6_Ww_vmpyacc_WwVhVh, widen_vv(2, true, true, true));
    HVX_CHECK(Q6_Wuw_vmpy_VuhVuh, no_acc_vv(widen_vv(2, false, false, false)));
    HVX_CHECK(Q6_Wuw_vmpyacc_WuwVuhVuh, widen_vv(2, false, false, true));
    HVX_CHECK(Q6_Ww_vmpy_VhVuh, no_acc_vv(widen_vv(2, true, false, false)));
    HVX_CHECK(Q6_Ww_vmpyacc_WwVhVuh, widen_vv(2, true, false, true));
}

TEST(HvxMultiply, WideningVectorByScalar) {
    HVX_CHECK(Q6_Wh_vmpy_VubRb, no_acc_vr(widen_vr(1, false, true, false)));
    HVX_CHECK(Q6_Wh_vmpyacc_WhVubRb, widen_vr(1, false, true, true));
    HVX_CHECK(Q6_Wuh_vmpy_VubRub, no_acc_vr(widen_vr(1, false, false, false)));
    HVX_CHECK(Q6_Wuh_vmpyacc_WuhVubRub, widen_vr(1, false, false, true));
    HVX_CHECK(Q6_Ww_vmpy_VhRh, no_acc_vr(widen_vr(2, true, true, false)));
    HVX_CHECK(Q6_Ww_vmpyacc_WwVhRh, widen_vr(2, true, true, true));
    HVX_CHECK(Q6_Wuw_vmpy_VuhRuh, no_acc_vr(widen_vr(2, false, false, false)));
    HVX_CHECK(Q6_Wuw_vmpyacc_WuwVuhRuh, widen_vr(2, false, false, true));
    HVX_CHECK(Q6_Ww_vmpyacc_WwVhRh_sat, [](const PairBytes &x, const Bytes &u, int32_t r) {
        PairBytes d{};
        for (int j = 0; j < 64; ++j)
            put(d.data() + 128 * (j % 2), 4, j / 2, sat(get(x.data() + 128 * (j % 2), 4, true, j / 2) + get(u, 2, true, j) * shalf(r, j % 2), 4, true));
        return d;
    });
}

TEST(HvxMultiply, FractionalAndIntegerParts) {
    // Upper halfword of sat32(2ab [+ 0x8000]).
    const auto frac = [](int64_t a, int64_t b, bool rnd) { return sat(2 * a * b + (rnd ? 0x8000 : 0), 4, true) >> 16; };
    HVX_CHECK(Q6_Vh_vmpy_VhRh_s1_sat, lanes_scalar(2, true, [=](int64_t a, int32_t r, int j) { return frac(a, shalf(r, j % 2), false); }));
    HVX_CHECK(Q6_Vh_vmpy_VhRh_s1_rnd_sat, lanes_scalar(2, true, [=](int64_t a, int32_t r, int j) { return frac(a, shalf(r, j % 2), true); }));
    HVX_CHECK(Q6_Vh_vmpy_VhVh_s1_rnd_sat, lanes2(2, true, true, [=](int64_t a, int64_t b) { return frac(a, b, true); }));
    EXPECT_EQ(Q6_Vh_vmpy_VhVh_s1_rnd_sat(Q6_Vh_vsplat_R(0x8000), Q6_Vh_vsplat_R(0x8000))[0], 0x7FFF7FFF); // (-1)*(-1) saturates
    HVX_CHECK(Q6_Vh_vmpyi_VhVh, lanes2(2, true, true, [](int64_t a, int64_t b) { return a * b; }));
    HVX_CHECK(Q6_Vh_vmpyiacc_VhVhVh, [](const Bytes &x, const Bytes &u, const Bytes &v) {
        Bytes d{};
        for (int j = 0; j < 64; ++j) put(d, 2, j, get(x, 2, true, j) + get(u, 2, true, j) * get(v, 2, true, j));
        return d;
    });
    HVX_CHECK(Q6_Vh_vmpyi_VhRb, lanes_scalar(2, true, [](int64_t a, int32_t r, int j) { return a * sbyte(r, j % 4); }));
    HVX_CHECK(Q6_Vw_vmpyi_VwRb, lanes_scalar(4, true, [](int64_t a, int32_t r, int j) { return a * sbyte(r, j % 4); }));
    HVX_CHECK(Q6_Vw_vmpyi_VwRub, lanes_scalar(4, true, [](int64_t a, int32_t r, int j) { return a * ubyte(r, j % 4); }));
    HVX_CHECK(Q6_Vw_vmpyi_VwRh, lanes_scalar(4, true, [](int64_t a, int32_t r, int j) { return a * shalf(r, j % 2); }));
    const auto acc_scalar = [](int w, auto coef) {
        return [=](const Bytes &x, const Bytes &u, int32_t r) {
            Bytes d{};
            for (int j = 0; j < 128 / w; ++j) put(d, w, j, get(x, w, true, j) + get(u, w, true, j) * coef(r, j));
            return d;
        };
    };
    HVX_CHECK(Q6_Vh_vmpyiacc_VhVhRb, acc_scalar(2, [](int32_t r, int j) { return sbyte(r, j % 4); }));
    HVX_CHECK(Q6_Vw_vmpyiacc_VwVwRb, acc_scalar(4, [](int32_t r, int j) { return sbyte(r, j % 4); }));
    HVX_CHECK(Q6_Vw_vmpyiacc_VwVwRub, acc_scalar(4, [](int32_t r, int j) { return ubyte(r, j % 4); }));
    HVX_CHECK(Q6_Vw_vmpyiacc_VwVwRh, acc_scalar(4, [](int32_t r, int j) { return shalf(r, j % 2); }));
}

TEST(HvxMultiply, WordByHalfword) {
    // h0/h1: even/odd halfword of the matching Vv word.
    const auto h = [](const Bytes &v, int i, int k, bool s) { return get(v, 2, s, 2 * i + k); };
    const auto words = [](auto f) {
        return [=](const Bytes &u, const Bytes &v) {
            Bytes d{};
            for (int i = 0; i < 32; ++i) put(d, 4, i, f(get(u, 4, true, i), v, i));
            return d;
        };
    };
    HVX_CHECK(Q6_Vw_vmpyie_VwVuh, words([=](int64_t a, const Bytes &v, int i) { return a * h(v, i, 0, false); }));
    HVX_CHECK(Q6_Vw_vmpyio_VwVh, words([=](int64_t a, const Bytes &v, int i) { return a * h(v, i, 1, true); }));
    HVX_CHECK(Q6_Vw_vmpye_VwVuh, words([=](int64_t a, const Bytes &v, int i) { return (a * h(v, i, 0, false)) >> 16; }));
    HVX_CHECK(Q6_Vw_vmpyo_VwVh_s1_sat, words([=](int64_t a, const Bytes &v, int i) { return sat((a * h(v, i, 1, true)) >> 15, 4, true); }));
    HVX_CHECK(Q6_Vw_vmpyo_VwVh_s1_rnd_sat, words([=](int64_t a, const Bytes &v, int i) { return sat(((a * h(v, i, 1, true) >> 14) + 1) >> 1, 4, true); }));
    HVX_CHECK(Q6_Vw_vmpyieo_VhVh, [=](const Bytes &u, const Bytes &v) {
        Bytes d{};
        for (int i = 0; i < 32; ++i) put(d, 4, i, get(u, 2, true, 2 * i) * h(v, i, 1, true) * 65536);
        return d;
    });
    HVX_CHECK(Q6_Vw_vmpyieacc_VwVwVuh, [=](const Bytes &x, const Bytes &u, const Bytes &v) {
        Bytes d{};
        for (int i = 0; i < 32; ++i) put(d, 4, i, get(x, 4, true, i) + get(u, 4, true, i) * h(v, i, 0, false));
        return d;
    });
    HVX_CHECK(Q6_Vw_vmpyieacc_VwVwVh, [=](const Bytes &x, const Bytes &u, const Bytes &v) {
        Bytes d{};
        for (int i = 0; i < 32; ++i) put(d, 4, i, get(x, 4, true, i) + get(u, 4, true, i) * h(v, i, 0, true));
        return d;
    });
    HVX_CHECK(Q6_W_vmpye_VwVuh, [=](const Bytes &u, const Bytes &v) {
        Bytes lo{}, hi{};
        for (int i = 0; i < 32; ++i) {
            const int64_t p = get(u, 4, true, i) * h(v, i, 0, false);
            put(hi, 4, i, p >> 16);
            put(lo, 4, i, p * 65536);
        }
        return join(lo, hi);
    });
    HVX_CHECK(Q6_Vuw_vmpye_VuhRuh, lanes_scalar(4, false, [](int64_t a, int32_t r, int) { return (a & 0xFFFF) * uhalf(r, 0); }));
    HVX_CHECK(Q6_Vuw_vmpyeacc_VuwVuhRuh, [](const Bytes &x, const Bytes &u, int32_t r) {
        Bytes d{};
        for (int i = 0; i < 32; ++i) put(d, 4, i, get(x, 4, false, i) + get(u, 2, false, 2 * i) * uhalf(r, 0));
        return d;
    });
}

TEST(HvxMultiply, DualAndVerticalReductions) {
    // vdmpy: lanes 2i and 2i+1 times Rt bytes (2i)%4 and (2i+1)%4.
    const auto dual = [](int w, bool su, bool acc) {
        return [=](const Bytes &x, const Bytes &u, int32_t r) {
            Bytes d{};
            for (int i = 0; i < 64 / w; ++i)
                put(d, 2 * w, i, (acc ? get(x, 2 * w, true, i) : 0) + get(u, w, su, 2 * i) * sbyte(r, (2 * i) % 4) +
                                     get(u, w, su, 2 * i + 1) * sbyte(r, (2 * i + 1) % 4));
            return d;
        };
    };
    HVX_CHECK(Q6_Vh_vdmpy_VubRb, [=](const Bytes &u, int32_t r) { return dual(1, false, false)(Bytes{}, u, r); });
    HVX_CHECK(Q6_Vh_vdmpyacc_VhVubRb, dual(1, false, true));
    HVX_CHECK(Q6_Vw_vdmpy_VhRb, [=](const Bytes &u, int32_t r) { return dual(2, true, false)(Bytes{}, u, r); });
    HVX_CHECK(Q6_Vw_vdmpyacc_VwVhRb, dual(2, true, true));
    // Pair sliding window: hi lane i pairs lo.x[2i+1] with hi.x[2i].
    const auto dual_pair = [](int w, bool su, bool acc) {
        return [=](const PairBytes &x, const PairBytes &uu, int32_t r) {
            PairBytes d{};
            const uint8_t *u0 = uu.data(), *u1 = uu.data() + 128;
            for (int i = 0; i < 64 / w; ++i) {
                const int64_t c0 = sbyte(r, (2 * i) % 4), c1 = sbyte(r, (2 * i + 1) % 4);
                put(d.data(), 2 * w, i, (acc ? get(x.data(), 2 * w, true, i) : 0) + get(u0, w, su, 2 * i) * c0 + get(u0, w, su, 2 * i + 1) * c1);
                put(d.data() + 128, 2 * w, i, (acc ? get(x.data() + 128, 2 * w, true, i) : 0) + get(u0, w, su, 2 * i + 1) * c0 + get(u1, w, su, 2 * i) * c1);
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Wh_vdmpy_WubRb, [=](const PairBytes &uu, int32_t r) { return dual_pair(1, false, false)(PairBytes{}, uu, r); });
    HVX_CHECK(Q6_Wh_vdmpyacc_WhWubRb, dual_pair(1, false, true));
    HVX_CHECK(Q6_Ww_vdmpy_WhRb, [=](const PairBytes &uu, int32_t r) { return dual_pair(2, true, false)(PairBytes{}, uu, r); });
    HVX_CHECK(Q6_Ww_vdmpyacc_WwWhRb, dual_pair(2, true, true));
    // Saturating halfword dual products.
    const auto dual_sat = [](bool sr, bool acc) {
        return [=](const Bytes &x, const Bytes &u, int32_t r) {
            Bytes d{};
            for (int i = 0; i < 32; ++i) {
                const int64_t c0 = sr ? shalf(r, 0) : uhalf(r, 0), c1 = sr ? shalf(r, 1) : uhalf(r, 1);
                put(d, 4, i, sat((acc ? get(x, 4, true, i) : 0) + get(u, 2, true, 2 * i) * c0 + get(u, 2, true, 2 * i + 1) * c1, 4, true));
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Vw_vdmpy_VhRh_sat, [=](const Bytes &u, int32_t r) { return dual_sat(true, false)(Bytes{}, u, r); });
    HVX_CHECK(Q6_Vw_vdmpyacc_VwVhRh_sat, dual_sat(true, true));
    HVX_CHECK(Q6_Vw_vdmpy_VhRuh_sat, [=](const Bytes &u, int32_t r) { return dual_sat(false, false)(Bytes{}, u, r); });
    HVX_CHECK(Q6_Vw_vdmpyacc_VwVhRuh_sat, dual_sat(false, true));
    HVX_CHECK(Q6_Vw_vdmpy_VhVh_sat, [](const Bytes &u, const Bytes &v) {
        Bytes d{};
        for (int i = 0; i < 32; ++i)
            put(d, 4, i, sat(get(u, 2, true, 2 * i) * get(v, 2, true, 2 * i) + get(u, 2, true, 2 * i + 1) * get(v, 2, true, 2 * i + 1), 4, true));
        return d;
    });
    HVX_CHECK(Q6_Vw_vdmpyacc_VwVhVh_sat, [](const Bytes &x, const Bytes &u, const Bytes &v) {
        Bytes d{};
        for (int i = 0; i < 32; ++i)
            put(d, 4, i, sat(get(x, 4, true, i) + get(u, 2, true, 2 * i) * get(v, 2, true, 2 * i) + get(u, 2, true, 2 * i + 1) * get(v, 2, true, 2 * i + 1), 4, true));
        return d;
    });
    const auto dual_sat_pair = [](bool sr, bool acc) {
        return [=](const Bytes &x, const PairBytes &uu, int32_t r) {
            Bytes d{};
            for (int i = 0; i < 32; ++i) {
                const int64_t c0 = sr ? shalf(r, 0) : uhalf(r, 0), c1 = sr ? shalf(r, 1) : uhalf(r, 1);
                put(d, 4, i, sat((acc ? get(x, 4, true, i) : 0) + get(uu.data(), 2, true, 2 * i + 1) * c0 + get(uu.data() + 128, 2, true, 2 * i) * c1, 4, true));
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Vw_vdmpy_WhRh_sat, [=](const PairBytes &uu, int32_t r) { return dual_sat_pair(true, false)(Bytes{}, uu, r); });
    HVX_CHECK(Q6_Vw_vdmpyacc_VwWhRh_sat, dual_sat_pair(true, true));
    HVX_CHECK(Q6_Vw_vdmpy_WhRuh_sat, [=](const PairBytes &uu, int32_t r) { return dual_sat_pair(false, false)(Bytes{}, uu, r); });
    HVX_CHECK(Q6_Vw_vdmpyacc_VwWhRuh_sat, dual_sat_pair(false, true));
    // vmpa: low lane i = lo.x[2i]*b0 + hi.x[2i]*b1; high lane i = lo.x[2i+1]*b2 + hi.x[2i+1]*b3.
    const auto vertical = [](int w, bool su, bool sr, bool acc) {
        return [=](const PairBytes &x, const PairBytes &uu, int32_t r) {
            PairBytes d{};
            const auto c = [&](int k) { return sr ? sbyte(r, k) : ubyte(r, k); };
            for (int i = 0; i < 64 / w; ++i)
                for (int reg = 0; reg < 2; ++reg)
                    put(d.data() + 128 * reg, 2 * w, i,
                        (acc ? get(x.data() + 128 * reg, 2 * w, false, i) : 0) + get(uu.data(), w, su, 2 * i + reg) * c(2 * reg) +
                            get(uu.data() + 128, w, su, 2 * i + reg) * c(2 * reg + 1));
            return d;
        };
    };
    HVX_CHECK(Q6_Wh_vmpa_WubRb, [=](const PairBytes &uu, int32_t r) { return vertical(1, false, true, false)(PairBytes{}, uu, r); });
    HVX_CHECK(Q6_Wh_vmpaacc_WhWubRb, vertical(1, false, true, true));
    HVX_CHECK(Q6_Wh_vmpa_WubRub, [=](const PairBytes &uu, int32_t r) { return vertical(1, false, false, false)(PairBytes{}, uu, r); });
    HVX_CHECK(Q6_Wh_vmpaacc_WhWubRub, vertical(1, false, false, true));
    HVX_CHECK(Q6_Ww_vmpa_WhRb, [=](const PairBytes &uu, int32_t r) { return vertical(2, true, true, false)(PairBytes{}, uu, r); });
    HVX_CHECK(Q6_Ww_vmpaacc_WwWhRb, vertical(2, true, true, true));
    HVX_CHECK(Q6_Ww_vmpa_WuhRb, [=](const PairBytes &uu, int32_t r) { return vertical(2, false, true, false)(PairBytes{}, uu, r); });
    HVX_CHECK(Q6_Ww_vmpaacc_WwWuhRb, vertical(2, false, true, true));
    const auto vertical_vv = [](bool sv) {
        return [=](const PairBytes &uu, const PairBytes &vv) {
            PairBytes d{};
            for (int i = 0; i < 64; ++i)
                for (int reg = 0; reg < 2; ++reg)
                    put(d.data() + 128 * reg, 2, i,
                        get(uu.data(), 1, false, 2 * i + reg) * get(vv.data(), 1, sv, 2 * i + reg) +
                            get(uu.data() + 128, 1, false, 2 * i + reg) * get(vv.data() + 128, 1, sv, 2 * i + reg));
            return d;
        };
    };
    HVX_CHECK(Q6_Wh_vmpa_WubWb, vertical_vv(true));
    HVX_CHECK(Q6_Wh_vmpa_WubWub, vertical_vv(false));
    // vtmpy: dual sliding window plus the next element.
    const auto triple = [](int w, bool su, bool acc) {
        return [=](const PairBytes &x, const PairBytes &uu, int32_t r) {
            PairBytes d{};
            const uint8_t *u0 = uu.data(), *u1 = uu.data() + 128;
            for (int i = 0; i < 64 / w; ++i) {
                const int64_t c0 = sbyte(r, (2 * i) % 4), c1 = sbyte(r, (2 * i + 1) % 4);
                put(d.data(), 2 * w, i, (acc ? get(x.data(), 2 * w, true, i) : 0) + get(u0, w, su, 2 * i) * c0 + get(u0, w, su, 2 * i + 1) * c1 + get(u1, w, su, 2 * i));
                put(d.data() + 128, 2 * w, i, (acc ? get(x.data() + 128, 2 * w, true, i) : 0) + get(u0, w, su, 2 * i + 1) * c0 + get(u1, w, su, 2 * i) * c1 + get(u1, w, su, 2 * i + 1));
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Wh_vtmpy_WbRb, [=](const PairBytes &uu, int32_t r) { return triple(1, true, false)(PairBytes{}, uu, r); });
    HVX_CHECK(Q6_Wh_vtmpyacc_WhWbRb, triple(1, true, true));
    HVX_CHECK(Q6_Wh_vtmpy_WubRb, [=](const PairBytes &uu, int32_t r) { return triple(1, false, false)(PairBytes{}, uu, r); });
    HVX_CHECK(Q6_Wh_vtmpyacc_WhWubRb, triple(1, false, true));
    HVX_CHECK(Q6_Ww_vtmpy_WhRb, [=](const PairBytes &uu, int32_t r) { return triple(2, true, false)(PairBytes{}, uu, r); });
    HVX_CHECK(Q6_Ww_vtmpyacc_WwWhRb, triple(2, true, true));
}

TEST(HvxVrmpy, VectorAndScalarForms) {
    HVX_CHECK(Q6_Vw_vrmpy_VbVb, [](const Bytes &u, const Bytes &v) { return vrmpy_ref(true, true)(Bytes{}, u, v); });
    HVX_CHECK(Q6_Vw_vrmpyacc_VwVbVb, vrmpy_ref(true, true));
    HVX_CHECK(Q6_Vw_vrmpy_VubVb, [](const Bytes &u, const Bytes &v) { return vrmpy_ref(false, true)(Bytes{}, u, v); });
    HVX_CHECK(Q6_Vw_vrmpyacc_VwVubVb, vrmpy_ref(false, true));
    HVX_CHECK(Q6_Vuw_vrmpy_VubVub, [](const Bytes &u, const Bytes &v) { return vrmpy_ref(false, false)(Bytes{}, u, v); });
    HVX_CHECK(Q6_Vuw_vrmpyacc_VuwVubVub, vrmpy_ref(false, false));
    HVX_CHECK(Q6_Vw_vrmpy_VubRb, [](const Bytes &u, int32_t r) { return vrmpy_ref(false, true)(Bytes{}, u, splat_word(r)); });
    HVX_CHECK(Q6_Vw_vrmpyacc_VwVubRb, [](const Bytes &x, const Bytes &u, int32_t r) { return vrmpy_ref(false, true)(x, u, splat_word(r)); });
    HVX_CHECK(Q6_Vuw_vrmpy_VubRub, [](const Bytes &u, int32_t r) { return vrmpy_ref(false, false)(Bytes{}, u, splat_word(r)); });
    HVX_CHECK(Q6_Vuw_vrmpyacc_VuwVubRub, [](const Bytes &x, const Bytes &u, int32_t r) { return vrmpy_ref(false, false)(x, u, splat_word(r)); });
    // Known answer: bytes (1, 2, 3, 4) . (-1, -1, -1, -1) = -10 in every word, accumulator wraps.
    const HVX_Vector u = Q6_V_vsplat_R(0x04030201), v = Q6_V_vsplat_R(-1);
    EXPECT_EQ(Q6_Vw_vrmpy_VbVb(u, v)[7], -10);
    EXPECT_EQ(Q6_Vw_vrmpyacc_VwVbVb(Q6_V_vsplat_R(int32_t(0x80000005u)), u, v)[31], 0x7FFFFFFB);
}

TEST(HvxVrmpy, SlidingWindowPairForms) {
    // Per ext.idef vrmpyubi / vrmpybusi, with c(k) = byte (k & 3) of Rt.
    const auto window = [](bool sr, bool acc, int u1) {
        return [=](const PairBytes &x, const PairBytes &uu, int32_t r) {
            const uint8_t *lo = uu.data(), *hi = uu.data() + 128, *sel = u1 ? hi : lo;
            const auto c = [&](int k) { return sr ? sbyte(r, k & 3) : ubyte(r, k & 3); };
            PairBytes d{};
            for (int i = 0; i < 32; ++i) {
                const auto b = [&](const uint8_t *p, int k) { return int64_t(p[4 * i + k]); };
                put(d.data(), 4, i, (acc ? get(x.data(), 4, true, i) : 0) + b(sel, 0) * c(0 - u1) + b(lo, 1) * c(1 - u1) + b(lo, 2) * c(2 - u1) + b(lo, 3) * c(3 - u1));
                put(d.data() + 128, 4, i, (acc ? get(x.data() + 128, 4, true, i) : 0) + b(hi, 0) * c(2 - u1) + b(hi, 1) * c(3 - u1) + b(sel, 2) * c(0 - u1) + b(lo, 3) * c(1 - u1));
            }
            return d;
        };
    };
    hvx_test::check("Q6_Ww_vrmpy_WubRbI #0", +[](HVX_VectorPair uu, int32_t r) { return Q6_Ww_vrmpy_WubRbI(uu, r, 0); },
                    [=](const PairBytes &uu, int32_t r) { return window(true, false, 0)(PairBytes{}, uu, r); });
    hvx_test::check("Q6_Ww_vrmpy_WubRbI #1", +[](HVX_VectorPair uu, int32_t r) { return Q6_Ww_vrmpy_WubRbI(uu, r, 1); },
                    [=](const PairBytes &uu, int32_t r) { return window(true, false, 1)(PairBytes{}, uu, r); });
    hvx_test::check("Q6_Ww_vrmpyacc_WwWubRbI #0", +[](HVX_VectorPair x, HVX_VectorPair uu, int32_t r) { return Q6_Ww_vrmpyacc_WwWubRbI(x, uu, r, 0); }, window(true, true, 0));
    hvx_test::check("Q6_Ww_vrmpyacc_WwWubRbI #1", +[](HVX_VectorPair x, HVX_VectorPair uu, int32_t r) { return Q6_Ww_vrmpyacc_WwWubRbI(x, uu, r, 1); }, window(true, true, 1));
    hvx_test::check("Q6_Wuw_vrmpy_WubRubI #1", +[](HVX_VectorPair uu, int32_t r) { return Q6_Wuw_vrmpy_WubRubI(uu, r, 1); },
                    [=](const PairBytes &uu, int32_t r) { return window(false, false, 1)(PairBytes{}, uu, r); });
    hvx_test::check("Q6_Wuw_vrmpy_WubRubI #0", +[](HVX_VectorPair uu, int32_t r) { return Q6_Wuw_vrmpy_WubRubI(uu, r, 0); },
                    [=](const PairBytes &uu, int32_t r) { return window(false, false, 0)(PairBytes{}, uu, r); });
    hvx_test::check("Q6_Wuw_vrmpyacc_WuwWubRubI #1", +[](HVX_VectorPair x, HVX_VectorPair uu, int32_t r) { return Q6_Wuw_vrmpyacc_WuwWubRubI(x, uu, r, 1); }, window(false, true, 1));
}

// The SIMD paths behind the public names (vrmpy, vmpy, vlut) against the portable element loops,
// on random data including the extreme bytes (0x80 x 0x80 is the worst case for the signed x
// signed bias trick).
TEST(HvxSimd, FastPathsMatchPortable) {
    std::mt19937 rng(7);
    for (int c = 0; c < 200; ++c) {
        Bytes a, b, x;
        for (int i = 0; i < 128; ++i) {
            a[i] = c < 4 ? uint8_t(0x80 + 0x7F * (c & 1)) : uint8_t(rng());
            b[i] = c < 4 ? uint8_t(0x80 + 0x7F * (c >> 1)) : uint8_t(rng());
            x[i] = uint8_t(rng());
        }
        const HVX_Vector u = vec_of(a), v = vec_of(b), acc = vec_of(x);
        using namespace hexnpu::hvx::intrinsics;
        ASSERT_EQ(bytes_of(Q6_Vw_vrmpyacc_VwVbVb(acc, u, v)), bytes_of(portable::vrmpy<int8_t, int8_t>(acc, u, v))) << c;
        ASSERT_EQ(bytes_of(Q6_Vw_vrmpyacc_VwVubVb(acc, u, v)), bytes_of(portable::vrmpy<uint8_t, int8_t>(acc, u, v))) << c;
        ASSERT_EQ(bytes_of(Q6_Vuw_vrmpyacc_VuwVubVub(acc, u, v)), bytes_of(portable::vrmpy<uint8_t, uint8_t>(acc, u, v))) << c;
        const HVX_VectorPair w = Q6_W_vcombine_VV(acc, v);
        ASSERT_EQ(bytes_of(Q6_Wh_vmpyacc_WhVubVb(w, u, v)), bytes_of(portable::vmpy_ub_b(u, v, &w))) << c;
        ASSERT_EQ(bytes_of(Q6_Wh_vmpy_VbVb(u, v)), bytes_of(portable::vmpy_b_b(u, v, nullptr))) << c;
        ASSERT_EQ(bytes_of(Q6_Wuh_vmpyacc_WuhVubVub(w, u, v)), bytes_of(portable::vmpy_ub_ub(u, v, &w))) << c;
        for (unsigned control : {0u, 2u, 5u, 7u, 13u, 15u, unsigned(c)}) {
            ASSERT_EQ(bytes_of(Q6_Vb_vlut32or_VbVbVbR(acc, u, v, int32_t(control))), bytes_of(portable::lut32(&acc, u, v, control, false))) << c;
            ASSERT_EQ(bytes_of(Q6_Vb_vlut32_VbVbR_nomatch(u, v, int32_t(control))), bytes_of(portable::lut32(nullptr, u, v, control, true))) << c;
            ASSERT_EQ(bytes_of(Q6_Wh_vlut16or_WhVbVhR(w, u, v, int32_t(control))), bytes_of(portable::lut16(&w, u, v, control, false))) << c;
            ASSERT_EQ(bytes_of(Q6_Wh_vlut16_VbVhR_nomatch(u, v, int32_t(control))), bytes_of(portable::lut16(nullptr, u, v, control, true))) << c;
        }
    }
}
