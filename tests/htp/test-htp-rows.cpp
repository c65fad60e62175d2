// SET_ROWS on an in-process virtual NPU (strict DMA on): F32 rows (padded, so not contiguous) into
// the F16 or F32 rows of a cache that their I64/I32 ids name, ids broadcast over dim 2, on v73
// (qf32 narrowing) and v79 (IEEE), 1-2 threads, more rows than one DMA block holds. Each written row
// equals GGML's conversion (core/fp16.h, round to nearest even, infinities past 65504) bit for bit,
// every other byte of the cache keeps its sentinel, and an id outside the cache fails the op with
// INVAL_PARAMS without a DMA fault.
#include "core/fp16.h"
#include "htp/htp-iface.h"
#include "proto/htp-binary.h"
#include "proto/htp-rows.h"
#include "proto/htp-status.h"
#include "test-htp-util.h"
#include "vnpu/platform/in-process-session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

namespace {

using namespace hexnpu;
using vnpu::batch_builder;
using vnpu::in_process_session;
using vnpu::shared_buffer;

vnpu::platform_config quiet_config(uint32_t arch) {
    vnpu::platform_config cfg;
    cfg.arch         = arch;
    cfg.host_threads = 2;
    cfg.window_size  = 64 << 20;
    cfg.log          = [](int, const std::string &) {};
    return cfg;
}

struct set_rows_case {
    uint32_t ne0, n_src, n_dst, ne2;  // src [ne0, n_src, ne2], dst [ne0, n_dst, ne2]
    uint32_t ids_ne1;                 // 1: one id table for every slice, else ne2 tables
    bool     f16, i64;
    uint32_t n_threads;
};

struct set_rows_setup {
    proto::htp_tensor    src{}, ids{}, dst{};
    shared_buffer        sbuf, ibuf, dbuf;
    std::vector<float>   values;
    std::vector<int64_t> rows;  // [slice table][i1]

    set_rows_setup(const set_rows_case & c, uint32_t seed) :
        sbuf(size_t(c.ne0 * 4 + 64) * c.n_src * c.ne2),
        ibuf(size_t(c.n_src) * c.ids_ne1 * 8),
        dbuf(size_t(c.ne0) * (c.f16 ? 2 : 4) * c.n_dst * c.ne2) {
        std::mt19937                          rng(seed);
        std::uniform_real_distribution<float> dist(-70000.0f, 70000.0f);  // some past the F16 range
        src.type = 0, src.flags = proto::HTP_TENSOR_COMPUTE, src.size = sbuf.size();
        src.ne[0] = c.ne0, src.ne[1] = c.n_src, src.ne[2] = c.ne2, src.ne[3] = 1;
        src.nb[0] = 4, src.nb[1] = c.ne0 * 4 + 64, src.nb[2] = src.nb[1] * c.n_src, src.nb[3] = src.nb[2] * c.ne2;
        values.resize(size_t(c.ne0) * c.n_src * c.ne2);
        for (float & v : values) {
            v = dist(rng);
        }
        for (size_t r = 0; r < size_t(c.n_src) * c.ne2; ++r) {
            std::memcpy(sbuf.data() + r * src.nb[1], &values[r * c.ne0], c.ne0 * 4);
        }
        const uint32_t id_bytes = c.i64 ? 8 : 4;
        ids.type = c.i64 ? 27 : 26, ids.flags = proto::HTP_TENSOR_COMPUTE, ids.size = size_t(c.n_src) * c.ids_ne1 * id_bytes;
        ids.ne[0] = c.n_src, ids.ne[1] = c.ids_ne1, ids.ne[2] = ids.ne[3] = 1;
        ids.nb[0] = id_bytes, ids.nb[1] = c.n_src * id_bytes, ids.nb[2] = ids.nb[3] = ids.nb[1] * c.ids_ne1;
        for (uint32_t t = 0; t < c.ids_ne1; ++t) {
            std::vector<int64_t> perm(c.n_dst);
            std::iota(perm.begin(), perm.end(), 0);
            std::shuffle(perm.begin(), perm.end(), rng);
            rows.insert(rows.end(), perm.begin(), perm.begin() + c.n_src);
        }
        write_ids();
        const uint32_t elem = c.f16 ? 2 : 4;
        dst.type = c.f16 ? 1 : 0, dst.flags = proto::HTP_TENSOR_COMPUTE, dst.size = dbuf.size();
        dst.ne[0] = c.ne0, dst.ne[1] = c.n_dst, dst.ne[2] = c.ne2, dst.ne[3] = 1;
        dst.nb[0] = elem, dst.nb[1] = c.ne0 * elem, dst.nb[2] = dst.nb[1] * c.n_dst, dst.nb[3] = dst.nb[2] * c.ne2;
        std::memset(dbuf.data(), 0x77, dbuf.size());
    }

    void write_ids() {
        for (size_t i = 0; i < rows.size(); ++i) {
            if (ids.type == 27) {
                std::memcpy(ibuf.data() + i * 8, &rows[i], 8);
            } else {
                const int32_t r = int32_t(rows[i]);
                std::memcpy(ibuf.data() + i * 4, &r, 4);
            }
        }
    }

    uint32_t run(in_process_session & s, const proto::htp_set_rows_kparams & kp) {
        batch_builder b;
        const std::pair<proto::htp_tensor *, const shared_buffer *> operands[] = {{&src, &sbuf}, {&ids, &ibuf}, {&dst, &dbuf}};
        for (const auto & [t, buf] : operands) {
            t->bi = b.add_buffer(*buf, false);
            b.add_tensor(*t);
        }
        proto::htp_op_desc op = batch_builder::op(proto::HTP_OP_SET_ROWS, {0, 1}, {2});
        std::memcpy(op.kparams, &kp, sizeof kp);
        b.add_op(op);
        vnpu::packed_batch batch  = b.pack(1, 0, 0);
        const uint32_t     status = s.process(batch).status;
        for (const auto & [t, buf] : operands) {
            htp_iface_munmap(s.handle(), buf->fd());
        }
        return status;
    }
};

::testing::AssertionResult cache_matches(const set_rows_case & c, const set_rows_setup & st) {
    const uint32_t       elem = c.f16 ? 2 : 4;
    std::vector<uint8_t> want(st.dbuf.size(), 0x77);
    for (uint32_t i2 = 0; i2 < c.ne2; ++i2) {
        for (uint32_t i1 = 0; i1 < c.n_src; ++i1) {
            const int64_t row = st.rows[size_t(i2 % c.ids_ne1) * c.n_src + i1];
            uint8_t *     out = want.data() + size_t(i2) * st.dst.nb[2] + size_t(row) * st.dst.nb[1];
            for (uint32_t i0 = 0; i0 < c.ne0; ++i0) {
                const float x = st.values[(size_t(i2) * c.n_src + i1) * c.ne0 + i0];
                if (c.f16) {
                    const uint16_t h = fp32_to_fp16(x);
                    std::memcpy(out + i0 * elem, &h, 2);
                } else {
                    std::memcpy(out + i0 * elem, &x, 4);
                }
            }
        }
    }
    for (size_t i = 0; i < want.size(); ++i) {
        if (want[i] != st.dbuf.data()[i]) {
            return ::testing::AssertionFailure() << "cache byte " << i << " (row " << i / st.dst.nb[1] << "): got "
                                                 << int(st.dbuf.data()[i]) << ", want " << int(want[i]);
        }
    }
    return ::testing::AssertionSuccess();
}

TEST(HtpSetRows, WritesEachRowWhereItsIdSaysAndNothingElse) {
    const set_rows_case cases[] = {
        {256, 1, 64, 1, 1, true, true, 1},    // one decode token, Gemma 3's rows
        {256, 40, 64, 1, 1, true, true, 2},   // a micro-batch: more rows than one DMA block
        {80, 5, 9, 3, 3, true, false, 2},     // odd vector count, a table per slice
        {96, 6, 10, 2, 1, false, true, 2},    // F32 cache, one table broadcast over the slices
        {4096, 3, 4, 1, 1, true, false, 1},   // long rows
    };
    for (const uint32_t arch : {73u, 79u}) {
        in_process_session s(quiet_config(arch), 2);
        uint32_t           seed = 5;
        for (const set_rows_case & c : cases) {
            SCOPED_TRACE("v" + std::to_string(arch) + " ne0 " + std::to_string(c.ne0) + " rows " + std::to_string(c.n_src));
            set_rows_setup             st(c, seed++);
            proto::htp_set_rows_kparams kp{};
            ASSERT_TRUE(proto::prepare_set_rows_kparams(st.src, &st.ids, st.dst, c.n_threads, 8u << 20, &kp));
            ASSERT_EQ(st.run(s, kp), proto::HTP_STATUS_OK) << s.platform().last_violation();
            EXPECT_TRUE(cache_matches(c, st));
            EXPECT_EQ(s.platform().last_violation(), "");
        }
    }
}

TEST(HtpSetRows, AnIdOutsideTheCacheIsInvalParams) {
    in_process_session  s(quiet_config(79), 2);
    const set_rows_case c{64, 4, 8, 1, 1, true, true, 2};
    for (const int64_t bad : {int64_t(8), int64_t(-1), int64_t(1) << 40}) {
        set_rows_setup st(c, 9);
        st.rows[2] = bad;
        st.write_ids();
        proto::htp_set_rows_kparams kp{};
        ASSERT_TRUE(proto::prepare_set_rows_kparams(st.src, &st.ids, st.dst, c.n_threads, 8u << 20, &kp));
        EXPECT_EQ(st.run(s, kp), proto::HTP_STATUS_INVAL_PARAMS) << bad;
        EXPECT_EQ(s.platform().last_violation(), "") << bad;
    }
}

TEST(HtpSetRows, HostRefusesWhatTheKernelCannotWrite) {
    set_rows_setup              st({64, 4, 8, 2, 1, true, true, 1}, 3);
    proto::htp_set_rows_kparams kp{};
    ASSERT_TRUE(proto::prepare_set_rows_kparams(st.src, &st.ids, st.dst, 2, 8u << 20, &kp));
    EXPECT_LE(kp.pipe.block_rows, proto::HTP_SET_ROWS_MAX_BLOCK_ROWS);
    proto::htp_tensor q8 = st.dst;  // Q8_0 with an F16 row's strides: not 34-byte blocks
    q8.type              = 8;
    EXPECT_FALSE(proto::prepare_set_rows_kparams(st.src, &st.ids, q8, 2, 8u << 20, &kp));
    proto::htp_tensor ids3 = st.ids;  // 3 tables do not divide 2 slices
    ids3.ne[1]             = 3;
    ids3.nb[2] = ids3.nb[3] = ids3.nb[1] * 3;
    ids3.size              = ids3.nb[2];
    EXPECT_FALSE(proto::prepare_set_rows_kparams(st.src, &ids3, st.dst, 2, 8u << 20, &kp));
    proto::htp_tensor short_dst = st.dst;  // rows past the tensor's bytes
    short_dst.size -= 2;
    EXPECT_FALSE(proto::prepare_set_rows_kparams(st.src, &st.ids, short_dst, 2, 8u << 20, &kp));
}

} // namespace

// ADD_ID (the binary pipeline with src1's row chosen by id): each dst row is src0's plus the
// bias row its id names, exactly; an id outside the biases fails the op with INVAL_PARAMS without
// a DMA fault.
namespace {

proto::htp_tensor f32_tensor(uint32_t ne0, uint32_t ne1, uint32_t ne2, const shared_buffer & buf) {
    proto::htp_tensor t{};
    t.type = 0, t.flags = proto::HTP_TENSOR_COMPUTE, t.size = buf.size();
    t.ne[0] = ne0, t.ne[1] = ne1, t.ne[2] = ne2, t.ne[3] = 1;
    t.nb[0] = 4, t.nb[1] = ne0 * 4, t.nb[2] = t.nb[1] * ne1, t.nb[3] = t.nb[2] * ne2;
    return t;
}

} // namespace

TEST(HtpAddId, AddsEachRowsExpertBiasAndRefusesAnIdOutsideThem) {
    in_process_session s(quiet_config(79), 2);
    const uint32_t     ne0 = 40, n_used = 3, n_tokens = 5, n_experts = 4;
    for (const int32_t bad : {-1, 0, 4}) {  // 0: every id valid
        shared_buffer abuf(size_t(ne0) * n_used * n_tokens * 4), bbuf(size_t(ne0) * n_experts * 4);
        shared_buffer ibuf(size_t(n_used) * n_tokens * 4), dbuf(abuf.size());
        proto::htp_tensor a = f32_tensor(ne0, n_used, n_tokens, abuf), b = f32_tensor(ne0, n_experts, 1, bbuf);
        proto::htp_tensor d = f32_tensor(ne0, n_used, n_tokens, dbuf), ids = f32_tensor(n_used, n_tokens, 1, ibuf);
        ids.type            = 26;
        std::mt19937 rng(3);
        std::vector<float> av(abuf.size() / 4), bv(bbuf.size() / 4);
        std::vector<int32_t> iv(n_used * n_tokens);
        for (float & v : av) v = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
        for (float & v : bv) v = std::uniform_real_distribution<float>(-2.0f, 2.0f)(rng);
        for (int32_t & v : iv) v = int32_t(rng() % n_experts);
        if (bad != 0) iv[7] = bad;
        std::memcpy(abuf.data(), av.data(), abuf.size());
        std::memcpy(bbuf.data(), bv.data(), bbuf.size());
        std::memcpy(ibuf.data(), iv.data(), ibuf.size());
        proto::htp_binary_kparams kp{};
        ASSERT_TRUE(proto::prepare_add_id_kparams(a, b, ids, d, 2, 8u << 20, &kp));
        batch_builder b_;
        const std::pair<proto::htp_tensor *, const shared_buffer *> operands[] = {{&a, &abuf}, {&b, &bbuf}, {&ids, &ibuf}, {&d, &dbuf}};
        for (const auto & [t, buf] : operands) {
            t->bi = b_.add_buffer(*buf, false);
            b_.add_tensor(*t);
        }
        proto::htp_op_desc op = batch_builder::op(proto::HTP_OP_ADD_ID, {0, 1, 2}, {3});
        std::memcpy(op.kparams, &kp, sizeof kp);
        b_.add_op(op);
        vnpu::packed_batch batch  = b_.pack(1, 0, 0);
        const uint32_t     status = s.process(batch).status;
        for (const auto & [t, buf] : operands) {
            htp_iface_munmap(s.handle(), buf->fd());
        }
        EXPECT_EQ(s.platform().last_violation(), "") << bad;
        if (bad != 0) {
            EXPECT_EQ(status, proto::HTP_STATUS_INVAL_PARAMS) << bad;
            continue;
        }
        ASSERT_EQ(status, proto::HTP_STATUS_OK);
        const float * got = reinterpret_cast<const float *>(dbuf.data());
        for (uint32_t r = 0; r < n_used * n_tokens; ++r) {
            for (uint32_t e = 0; e < ne0; ++e) {
                ASSERT_EQ(got[r * ne0 + e], av[r * ne0 + e] + bv[size_t(iv[r]) * ne0 + e]) << "row " << r << ", element " << e;
            }
        }
    }
}
