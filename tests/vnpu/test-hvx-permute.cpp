// Permutes, predicates and memory helpers of the HVX emulation (hvx-permute.h, hvx-predicate.h,
// hvx-memory.h) against index-formula references written from the instruction semantics.
#include "test-hvx-support.h"

#include <vector>

using namespace hvx_test;

namespace {

// Element e (of `width` bytes) of a byte array as raw bits.
uint64_t elem(const uint8_t *b, int width, int e) { return uint64_t(get(b, width, false, e)); }

} // namespace

TEST(HvxPermute, InLaneShufflesAndDeals) {
    const auto shuffle_part = [](int w, int part) {
        return [=](const Bytes &u, const Bytes &v) {
            Bytes d{};
            for (int i = 0; i < 64 / w; ++i) {
                put(d, w, 2 * i, elem(v.data(), w, 2 * i + part));
                put(d, w, 2 * i + 1, elem(u.data(), w, 2 * i + part));
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Vb_vshuffe_VbVb, shuffle_part(1, 0));
    HVX_CHECK(Q6_Vb_vshuffo_VbVb, shuffle_part(1, 1));
    HVX_CHECK(Q6_Vh_vshuffe_VhVh, shuffle_part(2, 0));
    HVX_CHECK(Q6_Vh_vshuffo_VhVh, shuffle_part(2, 1));
    HVX_CHECK(Q6_Wb_vshuffoe_VbVb, [=](const Bytes &u, const Bytes &v) { return join(shuffle_part(1, 0)(u, v), shuffle_part(1, 1)(u, v)); });
    HVX_CHECK(Q6_Wh_vshuffoe_VhVh, [=](const Bytes &u, const Bytes &v) { return join(shuffle_part(2, 0)(u, v), shuffle_part(2, 1)(u, v)); });
    // deal: even elements to the low half, odd to the high half; shuffle is its inverse.
    const auto deal = [](int w) {
        return [=](const Bytes &u) {
            Bytes d{};
            const int n = 128 / w;
            for (int e = 0; e < n; ++e) put(d, w, (e % 2) * (n / 2) + e / 2, elem(u.data(), w, e));
            return d;
        };
    };
    const auto shuffle = [](int w) {
        return [=](const Bytes &u) {
            Bytes d{};
            const int n = 128 / w;
            for (int e = 0; e < n; ++e) put(d, w, e, elem(u.data(), w, (e % 2) * (n / 2) + e / 2));
            return d;
        };
    };
    HVX_CHECK(Q6_Vb_vdeal_Vb, deal(1));
    HVX_CHECK(Q6_Vh_vdeal_Vh, deal(2));
    HVX_CHECK(Q6_Vb_vshuff_Vb, shuffle(1));
    HVX_CHECK(Q6_Vh_vshuff_Vh, shuffle(2));
    HVX_CHECK(Q6_Vb_vdeale_VbVb, [](const Bytes &u, const Bytes &v) {
        Bytes d{};
        for (int i = 0; i < 32; ++i) {
            d[i] = v[4 * i];
            d[32 + i] = v[4 * i + 2];
            d[64 + i] = u[4 * i];
            d[96 + i] = u[4 * i + 2];
        }
        return d;
    });
}

TEST(HvxPermute, TwoVectorShuffleAndDealByRt) {
    // With Rt = -(element size in bytes), as the programmer's reference uses them, vshuff
    // interleaves Vv and Vu element by element and vdeal separates even and odd elements,
    // checked here for every size; other Rt values are covered by the qemu differential test.
    for (int size = 1; size < 128; size *= 2) {
        SCOPED_TRACE(size);
        std::mt19937 rng(size);
        Bytes u, v;
        for (int i = 0; i < 128; ++i) u[i] = uint8_t(rng()), v[i] = uint8_t(rng());
        // concat = Vv then Vu (256 bytes) as elements of `size` bytes.
        std::vector<uint8_t> interleaved(256), dealt(256);
        const int n = 128 / size;
        for (int e = 0; e < n; ++e)
            for (int k = 0; k < size; ++k) {
                interleaved[(2 * e) * size + k] = v[e * size + k];
                interleaved[(2 * e + 1) * size + k] = u[e * size + k];
            }
        std::vector<uint8_t> concat(v.begin(), v.end());
        concat.insert(concat.end(), u.begin(), u.end());
        for (int e = 0; e < 2 * n; ++e)
            for (int k = 0; k < size; ++k) dealt[((e % 2) * n + e / 2) * size + k] = concat[e * size + k];
        const PairBytes s = bytes_of(Q6_W_vshuff_VVR(vec_of(u), vec_of(v), -size));
        const PairBytes d = bytes_of(Q6_W_vdeal_VVR(vec_of(u), vec_of(v), -size));
        EXPECT_TRUE(std::equal(s.begin(), s.end(), interleaved.begin()));
        EXPECT_TRUE(std::equal(d.begin(), d.end(), dealt.begin()));
        // Deal undoes shuffle.
        const HVX_VectorPair sv = Q6_W_vshuff_VVR(vec_of(u), vec_of(v), -size);
        EXPECT_EQ(bytes_of(Q6_W_vdeal_VVR(Q6_V_hi_W(sv), Q6_V_lo_W(sv), -size)), join(v, u));
    }
    EXPECT_EQ(bytes_of(Q6_W_vshuff_VVR(Q6_V_vsplat_R(1), Q6_V_vsplat_R(2), 0)), join(bytes_of(Q6_V_vsplat_R(2)), bytes_of(Q6_V_vsplat_R(1))));
}

// The table-driven fast path of vshuff/vdeal equals the stage-by-stage reference (the one the qemu
// differential test pins to the real instructions) for every Rt.
TEST(HvxPermute, TwoVectorShuffleFastPathEqualsTheReferenceForEveryRt) {
    std::mt19937 rng(11);
    for (int32_t rt = -128; rt < 256; ++rt) {
        Bytes u, v;
        for (int i = 0; i < 128; ++i) u[i] = uint8_t(rng()), v[i] = uint8_t(rng());
        for (bool ascending : {true, false}) {
            const PairBytes want =
                bytes_of(hexnpu::hvx::intrinsics::detail_permute::transpose_stages(vec_of(u), vec_of(v), rt, ascending));
            const PairBytes got = bytes_of(ascending ? Q6_W_vshuff_VVR(vec_of(u), vec_of(v), rt)
                                                     : Q6_W_vdeal_VVR(vec_of(u), vec_of(v), rt));
            ASSERT_EQ(got, want) << "rt " << rt << (ascending ? " vshuff" : " vdeal");
        }
    }
}

TEST(HvxPermute, PackUnpackExtend) {
    const auto pack = [](int w, auto f) {
        return [=](const Bytes &u, const Bytes &v) {
            Bytes d{};
            const int n = 128 / w;
            for (int i = 0; i < n; ++i) {
                put(d, w / 2, i, f(get(v, w, true, i)));
                put(d, w / 2, n + i, f(get(u, w, true, i)));
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Vb_vpacke_VhVh, pack(2, [](int64_t x) { return x; }));
    HVX_CHECK(Q6_Vb_vpacko_VhVh, pack(2, [](int64_t x) { return x >> 8; }));
    HVX_CHECK(Q6_Vh_vpacke_VwVw, pack(4, [](int64_t x) { return x; }));
    HVX_CHECK(Q6_Vh_vpacko_VwVw, pack(4, [](int64_t x) { return x >> 16; }));
    HVX_CHECK(Q6_Vub_vpack_VhVh_sat, pack(2, [](int64_t x) { return sat(x, 1, false); }));
    HVX_CHECK(Q6_Vb_vpack_VhVh_sat, pack(2, [](int64_t x) { return sat(x, 1, true); }));
    HVX_CHECK(Q6_Vuh_vpack_VwVw_sat, pack(4, [](int64_t x) { return sat(x, 2, false); }));
    HVX_CHECK(Q6_Vh_vpack_VwVw_sat, pack(4, [](int64_t x) { return sat(x, 2, true); }));
    // unpack keeps element order across the pair; zxt/sxt send even elements low, odd high.
    const auto unpack = [](int w, bool s) {
        return [=](const Bytes &u) {
            PairBytes d{};
            for (int e = 0; e < 128 / w; ++e) put(d.data(), 2 * w, e, get(u, w, s, e));
            return d;
        };
    };
    const auto extend = [](int w, bool s) {
        return [=](const Bytes &u) {
            PairBytes d{};
            for (int e = 0; e < 128 / w; ++e) put(d.data() + 128 * (e % 2), 2 * w, e / 2, get(u, w, s, e));
            return d;
        };
    };
    HVX_CHECK(Q6_Wuh_vunpack_Vub, unpack(1, false));
    HVX_CHECK(Q6_Wh_vunpack_Vb, unpack(1, true));
    HVX_CHECK(Q6_Wuw_vunpack_Vuh, unpack(2, false));
    HVX_CHECK(Q6_Ww_vunpack_Vh, unpack(2, true));
    HVX_CHECK(Q6_Wuh_vzxt_Vub, extend(1, false));
    HVX_CHECK(Q6_Wh_vsxt_Vb, extend(1, true));
    HVX_CHECK(Q6_Wuw_vzxt_Vuh, extend(2, false));
    HVX_CHECK(Q6_Ww_vsxt_Vh, extend(2, true));
    const auto unpack_odd_or = [](int w) {
        return [=](PairBytes x, const Bytes &u) {
            for (int e = 0; e < 128 / w; ++e) put(x.data(), 2 * w, e, int64_t(elem(x.data(), 2 * w, e) | (elem(u.data(), w, e) << (8 * w))));
            return x;
        };
    };
    HVX_CHECK(Q6_Wh_vunpackoor_WhVb, unpack_odd_or(1));
    HVX_CHECK(Q6_Ww_vunpackoor_WwVh, unpack_odd_or(2));
}

TEST(HvxPermute, DeltaNetworks) {
    const auto network = [](bool descending) {
        return [=](const Bytes &u, const Bytes &v) {
            Bytes cur = u;
            for (int s = 0; s < 7; ++s) {
                const int bit = descending ? 64 >> s : 1 << s;
                Bytes next;
                for (int k = 0; k < 128; ++k) next[k] = (v[k] & bit) ? cur[k ^ bit] : cur[k];
                cur = next;
            }
            return cur;
        };
    };
    HVX_CHECK(Q6_V_vdelta_VV, network(true));
    HVX_CHECK(Q6_V_vrdelta_VV, network(false));
    // A control of all k's set in one stage only: vrdelta with control 1 swaps neighbours.
    Bytes u;
    for (int i = 0; i < 128; ++i) u[i] = uint8_t(i);
    const Bytes swapped = bytes_of(Q6_V_vrdelta_VV(vec_of(u), Q6_Vb_vsplat_R(1)));
    for (int i = 0; i < 128; ++i) EXPECT_EQ(swapped[i], i ^ 1);
}

TEST(HvxPermute, AlignAndRotate) {
    // valign(u, v, n) = bytes n.. of the 256-byte string (v, u); vlalign(u, v, n) = valign by 128 - n.
    const auto align = [](const Bytes &u, const Bytes &v, unsigned n) {
        Bytes d;
        for (unsigned i = 0; i < 128; ++i) d[i] = (i + n) < 128 ? v[i + n] : u[i + n - 128];
        return d;
    };
    HVX_CHECK(Q6_V_valign_VVR, [=](const Bytes &u, const Bytes &v, int32_t r) { return align(u, v, unsigned(r) % 128); });
    HVX_CHECK(Q6_V_vlalign_VVR, [=](const Bytes &u, const Bytes &v, int32_t r) { return align(u, v, 128 - unsigned(r) % 128); });
    HVX_CHECK(Q6_V_valign_VVI, [=](const Bytes &u, const Bytes &v, int32_t r) { return align(u, v, unsigned(r) % 8); });
    HVX_CHECK(Q6_V_vlalign_VVI, [=](const Bytes &u, const Bytes &v, int32_t r) { return align(u, v, 128 - unsigned(r) % 8); });
    HVX_CHECK(Q6_V_vror_VR, [](const Bytes &u, int32_t r) {
        Bytes d;
        for (unsigned k = 0; k < 128; ++k) d[k] = u[(k + unsigned(r) % 128) % 128];
        return d;
    });
}

// Every window offset of valign/vror: each host fast path compiled here equals the portable
// unaligned reload (which AlignAndRotate checks against the byte formula through the dispatch).
TEST(HvxPermute, AlignWindowFastPathsEqualTheReferenceForEveryOffset) {
    namespace hi = hexnpu::hvx::intrinsics;
    std::mt19937 rng(5);
    int          checked = 0;
    for (unsigned s = 0; s <= 128; ++s) {
        Bytes lo, hi_bytes;
        for (int i = 0; i < 128; ++i) lo[i] = uint8_t(rng()), hi_bytes[i] = uint8_t(rng());
        const Bytes want = bytes_of(hi::portable::window(vec_of(lo), vec_of(hi_bytes), s));
        ASSERT_EQ(bytes_of(hi::detail_permute::window(vec_of(lo), vec_of(hi_bytes), s)), want) << "dispatch, offset " << s;
#if defined(__AVX512F__)
        if (s % 4 == 0) {
            ASSERT_EQ(bytes_of(hi::detail_permute::window_words(vec_of(lo), vec_of(hi_bytes), s)), want) << "words, offset " << s;
            ++checked;
        }
#endif
#if defined(__AVX512VBMI__)
        ASSERT_EQ(bytes_of(hi::detail_permute::window_bytes(vec_of(lo), vec_of(hi_bytes), s)), want) << "VBMI, offset " << s;
        ++checked;
#endif
    }
#if defined(__AVX512F__)
    EXPECT_GT(checked, 0);
#endif
}

TEST(HvxPermute, TableLookups) {
    // vlut32: entries are bytes (Rt bit 1: odd byte) of the 64 halfwords of Vv; index byte x
    // matches when x >> 5 == Rt & 7 and then selects halfword x & 63.
    const auto lut32 = [](const Bytes &x, const Bytes &u, const Bytes &v, unsigned control, bool nomatch) {
        Bytes d = x;
        const unsigned match = control & 7, odd = (control >> 1) & 1;
        for (int i = 0; i < 128; ++i) {
            unsigned idx = u[i];
            if (nomatch) idx = (idx & 31) | (match << 5);
            if ((idx >> 5) == match) d[i] |= v[2 * (idx & 63) + odd];
        }
        return d;
    };
    HVX_CHECK(Q6_Vb_vlut32_VbVbR, [=](const Bytes &u, const Bytes &v, int32_t r) { return lut32(Bytes{}, u, v, unsigned(r), false); });
    HVX_CHECK(Q6_Vb_vlut32_VbVbI, [=](const Bytes &u, const Bytes &v, int32_t r) { return lut32(Bytes{}, u, v, unsigned(r) & 7, false); });
    HVX_CHECK(Q6_Vb_vlut32_VbVbR_nomatch, [=](const Bytes &u, const Bytes &v, int32_t r) { return lut32(Bytes{}, u, v, unsigned(r), true); });
    HVX_CHECK(Q6_Vb_vlut32or_VbVbVbR, [=](const Bytes &x, const Bytes &u, const Bytes &v, int32_t r) { return lut32(x, u, v, unsigned(r), false); });
    HVX_CHECK(Q6_Vb_vlut32or_VbVbVbI, [=](const Bytes &x, const Bytes &u, const Bytes &v, int32_t r) { return lut32(x, u, v, unsigned(r) & 7, false); });
    // vlut16: halfword entries (Rt bit 1: odd halfword) of the 32 words of Vv; match on x >> 4.
    const auto lut16 = [](const PairBytes &x, const Bytes &u, const Bytes &v, unsigned control, bool nomatch) {
        PairBytes d = x;
        const unsigned match = control & 15, odd = (control >> 1) & 1;
        for (int j = 0; j < 128; ++j) {
            unsigned idx = u[j];
            if (nomatch) idx = (idx & 15) | (match << 4);
            if ((idx >> 4) == match) {
                uint8_t *out = d.data() + 128 * (j % 2) + 2 * (j / 2);
                out[0] |= v[4 * (idx & 31) + 2 * odd];
                out[1] |= v[4 * (idx & 31) + 2 * odd + 1];
            }
        }
        return d;
    };
    HVX_CHECK(Q6_Wh_vlut16_VbVhR, [=](const Bytes &u, const Bytes &v, int32_t r) { return lut16(PairBytes{}, u, v, unsigned(r), false); });
    HVX_CHECK(Q6_Wh_vlut16_VbVhI, [=](const Bytes &u, const Bytes &v, int32_t r) { return lut16(PairBytes{}, u, v, unsigned(r) & 7, false); });
    HVX_CHECK(Q6_Wh_vlut16_VbVhR_nomatch, [=](const Bytes &u, const Bytes &v, int32_t r) { return lut16(PairBytes{}, u, v, unsigned(r), true); });
    HVX_CHECK(Q6_Wh_vlut16or_WhVbVhR, [=](const PairBytes &x, const Bytes &u, const Bytes &v, int32_t r) { return lut16(x, u, v, unsigned(r), false); });
    HVX_CHECK(Q6_Wh_vlut16or_WhVbVhI, [=](const PairBytes &x, const Bytes &u, const Bytes &v, int32_t r) { return lut16(x, u, v, unsigned(r) & 7, false); });
}

TEST(HvxPredicate, ComparesSetEveryByteBitOfTheLane) {
    const auto cmp = [](int w, bool s, auto op) {
        return [=](const Bytes &u, const Bytes &v) {
            Pred q{};
            for (int j = 0; j < 128; ++j) q[j] = op(get(u, w, s, j / w), get(v, w, s, j / w));
            return q;
        };
    };
    const auto eq = [](int64_t a, int64_t b) { return a == b; };
    const auto gt = [](int64_t a, int64_t b) { return a > b; };
    HVX_CHECK(Q6_Q_vcmp_eq_VbVb, cmp(1, true, eq));
    HVX_CHECK(Q6_Q_vcmp_eq_VhVh, cmp(2, true, eq));
    HVX_CHECK(Q6_Q_vcmp_eq_VwVw, cmp(4, true, eq));
    HVX_CHECK(Q6_Q_vcmp_gt_VbVb, cmp(1, true, gt));
    HVX_CHECK(Q6_Q_vcmp_gt_VhVh, cmp(2, true, gt));
    HVX_CHECK(Q6_Q_vcmp_gt_VwVw, cmp(4, true, gt));
    HVX_CHECK(Q6_Q_vcmp_gt_VubVub, cmp(1, false, gt));
    HVX_CHECK(Q6_Q_vcmp_gt_VuhVuh, cmp(2, false, gt));
    HVX_CHECK(Q6_Q_vcmp_gt_VuwVuw, cmp(4, false, gt));
    const auto combine = [=](int w, bool s, auto op, int mode) {
        return [=](const Pred &x, const Bytes &u, const Bytes &v) {
            const Pred c = cmp(w, s, op)(u, v);
            Pred q;
            for (int j = 0; j < 128; ++j) q[j] = mode == 0 ? (x[j] && c[j]) : mode == 1 ? (x[j] || c[j]) : (x[j] != c[j]);
            return q;
        };
    };
    // Every accumulating form: mode 0 and, 1 or, 2 xor with the incoming predicate.
#define COMBINE(OP, OPF, T, W, S)                                                                  \
    HVX_CHECK(Q6_Q_vcmp_##OP##and_QV##T##V##T, combine(W, S, OPF, 0));                             \
    HVX_CHECK(Q6_Q_vcmp_##OP##or_QV##T##V##T, combine(W, S, OPF, 1));                              \
    HVX_CHECK(Q6_Q_vcmp_##OP##xacc_QV##T##V##T, combine(W, S, OPF, 2))
    COMBINE(eq, eq, b, 1, true);
    COMBINE(eq, eq, h, 2, true);
    COMBINE(eq, eq, w, 4, true);
    COMBINE(gt, gt, b, 1, true);
    COMBINE(gt, gt, h, 2, true);
    COMBINE(gt, gt, w, 4, true);
    COMBINE(gt, gt, ub, 1, false);
    COMBINE(gt, gt, uh, 2, false);
    COMBINE(gt, gt, uw, 4, false);
#undef COMBINE
}

TEST(HvxPredicate, LogicSetqAndMoves) {
    const auto bitwise = [](auto op) {
        return [=](const Pred &s, const Pred &t) {
            Pred q;
            for (int j = 0; j < 128; ++j) q[j] = op(s[j], t[j]);
            return q;
        };
    };
    HVX_CHECK(Q6_Q_and_QQ, bitwise([](bool a, bool b) { return a && b; }));
    HVX_CHECK(Q6_Q_and_QQn, bitwise([](bool a, bool b) { return a && !b; }));
    HVX_CHECK(Q6_Q_or_QQ, bitwise([](bool a, bool b) { return a || b; }));
    HVX_CHECK(Q6_Q_or_QQn, bitwise([](bool a, bool b) { return a || !b; }));
    HVX_CHECK(Q6_Q_xor_QQ, bitwise([](bool a, bool b) { return a != b; }));
    HVX_CHECK(Q6_Q_not_Q, [](const Pred &s) { Pred q; for (int j = 0; j < 128; ++j) q[j] = !s[j]; return q; });
    HVX_CHECK(Q6_Q_vsetq_R, [](int32_t r) { Pred q; for (int j = 0; j < 128; ++j) q[j] = j < int(unsigned(r) % 128); return q; });
    HVX_CHECK(Q6_Q_vsetq2_R, [](int32_t r) {
        const int n = int(unsigned(r) % 128);
        Pred q;
        for (int j = 0; j < 128; ++j) q[j] = n == 0 || j < n; // a count of 0 (mod 128) is all lanes
        return q;
    });
    HVX_CHECK(Q6_Qb_vshuffe_QhQh, [](const Pred &s, const Pred &t) { Pred q; for (int j = 0; j < 128; ++j) q[j] = (j & 1) ? s[j - 1] : t[j]; return q; });
    HVX_CHECK(Q6_Qh_vshuffe_QwQw, [](const Pred &s, const Pred &t) { Pred q; for (int j = 0; j < 128; ++j) q[j] = (j & 2) ? s[j - 2] : t[j]; return q; });
    HVX_CHECK(Q6_V_vand_QR, [](const Pred &q, int32_t r) { Bytes d; for (int j = 0; j < 128; ++j) d[j] = q[j] ? ubyte(r, j % 4) : 0; return d; });
    HVX_CHECK(Q6_V_vand_QnR, [](const Pred &q, int32_t r) { Bytes d; for (int j = 0; j < 128; ++j) d[j] = q[j] ? 0 : ubyte(r, j % 4); return d; });
    HVX_CHECK(Q6_V_vandor_VQR, [](Bytes x, const Pred &q, int32_t r) { for (int j = 0; j < 128; ++j) x[j] |= q[j] ? ubyte(r, j % 4) : 0; return x; });
    HVX_CHECK(Q6_V_vandor_VQnR, [](Bytes x, const Pred &q, int32_t r) { for (int j = 0; j < 128; ++j) x[j] |= q[j] ? 0 : ubyte(r, j % 4); return x; });
    HVX_CHECK(Q6_Q_vand_VR, [](const Bytes &u, int32_t r) { Pred q; for (int j = 0; j < 128; ++j) q[j] = (u[j] & ubyte(r, j % 4)) != 0; return q; });
    HVX_CHECK(Q6_Q_vandor_QVR, [](Pred x, const Bytes &u, int32_t r) { for (int j = 0; j < 128; ++j) x[j] = x[j] || (u[j] & ubyte(r, j % 4)); return x; });
    HVX_CHECK(Q6_V_vand_QV, [](const Pred &q, const Bytes &u) { Bytes d; for (int j = 0; j < 128; ++j) d[j] = q[j] ? u[j] : 0; return d; });
    HVX_CHECK(Q6_V_vand_QnV, [](const Pred &q, const Bytes &u) { Bytes d; for (int j = 0; j < 128; ++j) d[j] = q[j] ? 0 : u[j]; return d; });
    HVX_CHECK(Q6_V_vmux_QVV, [](const Pred &q, const Bytes &u, const Bytes &v) { Bytes d; for (int j = 0; j < 128; ++j) d[j] = q[j] ? u[j] : v[j]; return d; });
    HVX_CHECK(Q6_W_vswap_QVV, [](const Pred &q, const Bytes &u, const Bytes &v) {
        Bytes lo, hi;
        for (int j = 0; j < 128; ++j) lo[j] = q[j] ? u[j] : v[j], hi[j] = q[j] ? v[j] : u[j];
        return join(lo, hi);
    });
}

TEST(HvxPredicate, ConditionalAccumulateCarryPrefix) {
    // The lane result lands byte by byte, each byte under its own predicate bit.
    const auto cond = [](int w, int sign, bool negate) {
        return [=](const Pred &q, const Bytes &x, const Bytes &u) {
            Bytes r{};
            for (int i = 0; i < 128 / w; ++i) put(r, w, i, get(x, w, false, i) + sign * get(u, w, false, i));
            Bytes d;
            for (int j = 0; j < 128; ++j) d[j] = (q[j] != negate) ? r[j] : x[j];
            return d;
        };
    };
    HVX_CHECK(Q6_Vb_condacc_QVbVb, cond(1, 1, false));
    HVX_CHECK(Q6_Vh_condacc_QVhVh, cond(2, 1, false));
    HVX_CHECK(Q6_Vw_condacc_QVwVw, cond(4, 1, false));
    HVX_CHECK(Q6_Vb_condacc_QnVbVb, cond(1, 1, true));
    HVX_CHECK(Q6_Vh_condacc_QnVhVh, cond(2, 1, true));
    HVX_CHECK(Q6_Vw_condacc_QnVwVw, cond(4, 1, true));
    HVX_CHECK(Q6_Vb_condnac_QVbVb, cond(1, -1, false));
    HVX_CHECK(Q6_Vh_condnac_QVhVh, cond(2, -1, false));
    HVX_CHECK(Q6_Vw_condnac_QVwVw, cond(4, -1, false));
    HVX_CHECK(Q6_Vb_condnac_QnVbVb, cond(1, -1, true));
    HVX_CHECK(Q6_Vh_condnac_QnVhVh, cond(2, -1, true));
    HVX_CHECK(Q6_Vw_condnac_QnVwVw, cond(4, -1, true));
    HVX_CHECK(Q6_Vw_vadd_VwVwQ_carry_sat, [](const Bytes &u, const Bytes &v, const Pred &q) {
        Bytes d{};
        for (int i = 0; i < 32; ++i) put(d, 4, i, sat(get(u, 4, true, i) + get(v, 4, true, i) + q[4 * i], 4, true));
        return d;
    });
    // Carry chain: 64-bit addition built from two word additions.
    std::mt19937_64 rng(3);
    for (int c = 0; c < 50; ++c) {
        uint64_t a[32], b[32];
        Bytes lo_a, hi_a, lo_b, hi_b;
        for (int i = 0; i < 32; ++i) {
            a[i] = rng(), b[i] = c < 5 ? ~a[i] + uint64_t(c & 1) : rng();
            put(lo_a, 4, i, int64_t(a[i] & 0xFFFFFFFFu)), put(hi_a, 4, i, int64_t(a[i] >> 32));
            put(lo_b, 4, i, int64_t(b[i] & 0xFFFFFFFFu)), put(hi_b, 4, i, int64_t(b[i] >> 32));
        }
        for (bool subtract : {false, true}) {
            HVX_VectorPred carry = subtract ? Q6_Q_vsetq2_R(128) : Q6_Q_vsetq_R(0); // borrow-free start
            const auto op = subtract ? Q6_Vw_vsub_VwVwQ_carry : Q6_Vw_vadd_VwVwQ_carry;
            const Bytes lo = bytes_of(op(vec_of(lo_a), vec_of(lo_b), &carry));
            const Bytes hi = bytes_of(op(vec_of(hi_a), vec_of(hi_b), &carry));
            for (int i = 0; i < 32; ++i) {
                const uint64_t expected = subtract ? a[i] - b[i] : a[i] + b[i];
                const uint64_t got = uint64_t(get(lo, 4, false, i)) | uint64_t(get(hi, 4, false, i)) << 32;
                ASSERT_EQ(got, expected) << "case " << c << " lane " << i << (subtract ? " sub" : " add");
            }
        }
    }
    const auto prefix = [](int w) {
        return [=](const Pred &q) {
            Bytes d{};
            int64_t n = 0;
            for (int j = 0; j < 128; ++j) {
                n += q[j];
                if (j % w == w - 1) put(d, w, j / w, n);
            }
            return d;
        };
    };
    HVX_CHECK(Q6_Vb_prefixsum_Q, prefix(1));
    HVX_CHECK(Q6_Vh_prefixsum_Q, prefix(2));
    HVX_CHECK(Q6_Vw_prefixsum_Q, prefix(4));
}

TEST(HvxMemory, MaskedAlignedStores) {
    std::mt19937 rng(11);
    alignas(128) uint8_t block[128];
    for (int c = 0; c < 20; ++c) {
        Bytes old, value;
        Pred q;
        for (int i = 0; i < 128; ++i) old[i] = uint8_t(rng()), value[i] = uint8_t(rng()), q[i] = rng() & 1;
        for (int variant = 0; variant < 4; ++variant) {
            std::memcpy(block, old.data(), 128);
            // The address is rounded down to its 128-byte block, like vmem.
            auto *addr = reinterpret_cast<HVX_Vector *>(block + (variant == 3 ? 77 : 0));
            const bool negated = variant & 1;
            if (variant == 0) Q6_vmem_QRIV(pred_of(q), addr, vec_of(value));
            if (variant == 1) Q6_vmem_QnRIV(pred_of(q), addr, vec_of(value));
            if (variant == 2) Q6_vmem_QRIV_nt(pred_of(q), addr, vec_of(value));
            if (variant == 3) Q6_vmem_QnRIV_nt(pred_of(q), addr, vec_of(value));
            for (int i = 0; i < 128; ++i) ASSERT_EQ(block[i], (q[i] != negated) ? value[i] : old[i]) << c << " " << variant << " " << i;
        }
    }
}

TEST(HvxMemory, UnalignedLoadStoreAndPartialStores) {
    alignas(128) uint8_t buffer[512];
    Bytes value;
    for (int i = 0; i < 128; ++i) value[i] = uint8_t(i * 7 + 1);
    for (int offset = 0; offset < 256; offset += 5) {
        for (uint32_t n : {0u, 1u, 2u, 63u, 64u, 127u, 128u}) {
            std::memset(buffer, 0xEE, sizeof buffer);
            hexnpu::hvx::store_first_bytes(buffer + offset, vec_of(value), n);
            for (int i = 0; i < 512; ++i) {
                const bool inside = i >= offset && i < offset + int(n);
                ASSERT_EQ(buffer[i], inside ? value[i - offset] : 0xEE) << "offset " << offset << " n " << n << " byte " << i;
            }
        }
        std::memset(buffer, 0, sizeof buffer);
        hexnpu::hvx::store_unaligned(buffer + offset, vec_of(value));
        EXPECT_EQ(bytes_of(hexnpu::hvx::load_unaligned(buffer + offset)), value);
        EXPECT_EQ(0, std::memcmp(buffer + offset, value.data(), 128));
    }
}
