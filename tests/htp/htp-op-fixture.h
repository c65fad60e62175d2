// Shared pieces of the NPU-level op tests (test-htp-rope.cpp, -softmax, -flash-attn, -sort, -layout,
// -get-rows): an operand (a tensor descriptor and its own shared buffer, sentinel-filled), one op run
// on an in-process session (strict DMA on) with the kparams its proto prepare function gave, and
// small helpers for elements, fp16/bf16 and error reports. The references themselves live in each
// test file, written from GGML's semantics, not from the kernels.
#pragma once

#include "core/fp16.h"
#include "htp/htp-iface.h"
#include "proto/htp-msg.h"
#include "proto/htp-opcodes.h"
#include "proto/htp-status.h"
#include "vnpu/platform/in-process-session.h"
#include "vnpu/platform/shared-buffer.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace htp_op_fixture {

using namespace hexnpu;
using vnpu::batch_builder;
using vnpu::in_process_session;
using vnpu::shared_buffer;

inline constexpr uint8_t SENTINEL = 0xA5;

// A quiet platform: arch, VTCM bytes (0: the arch's), 4 host threads.
inline vnpu::platform_config config(uint32_t arch = 79, uint32_t vtcm = 0) {
    vnpu::platform_config c;
    c.arch         = arch;
    c.vtcm_size    = vtcm;
    c.host_threads = 4;
    c.window_size  = 256u << 20;
    c.log          = [](int, const std::string &) {};
    return c;
}

// One operand: its descriptor and its buffer (filled with SENTINEL).
struct operand {
    proto::htp_tensor              t{};
    std::unique_ptr<shared_buffer> buf;
    uint32_t                       elem = 4;

    uint8_t * data() const { return buf->data(); }
    uint64_t  offset(uint32_t i0, uint32_t i1 = 0, uint32_t i2 = 0, uint32_t i3 = 0) const {
        return uint64_t(i0) * t.nb[0] + uint64_t(i1) * t.nb[1] + uint64_t(i2) * t.nb[2] + uint64_t(i3) * t.nb[3];
    }
    template <class T> T get(uint32_t i0, uint32_t i1 = 0, uint32_t i2 = 0, uint32_t i3 = 0) const {
        T v;
        std::memcpy(&v, data() + offset(i0, i1, i2, i3), sizeof v);
        return v;
    }
    template <class T> void set(T v, uint32_t i0, uint32_t i1 = 0, uint32_t i2 = 0, uint32_t i3 = 0) {
        std::memcpy(data() + offset(i0, i1, i2, i3), &v, sizeof v);
    }
    // The element as a float, for F32 (0), F16 (1), BF16 (30) operands.
    float getf(uint32_t i0, uint32_t i1 = 0, uint32_t i2 = 0, uint32_t i3 = 0) const {
        if (t.type == 1) {
            return fp16_to_fp32(get<uint16_t>(i0, i1, i2, i3));
        }
        if (t.type == 30) {
            return bf16_to_fp32(get<uint16_t>(i0, i1, i2, i3));
        }
        return get<float>(i0, i1, i2, i3);
    }
    void setf(float v, uint32_t i0, uint32_t i1 = 0, uint32_t i2 = 0, uint32_t i3 = 0) {
        if (t.type == 1) {
            set<uint16_t>(fp32_to_fp16(v), i0, i1, i2, i3);
        } else if (t.type == 30) {
            set<uint16_t>(fp32_to_bf16(v), i0, i1, i2, i3);
        } else {
            set<float>(v, i0, i1, i2, i3);
        }
    }
};

inline uint32_t elem_size(uint32_t type) {
    return type == 1 || type == 30 ? 2 : type == 27 ? 8 : 4;
}

// An operand of type `type` and shape ne with strides nb (nb[0] 0: rows of ne0 elements plus
// row_pad bytes, slices packed). Its buffer covers every element, plus tail bytes.
inline operand make(uint32_t type, std::array<uint32_t, 4> ne, std::array<uint32_t, 4> nb = {}, uint32_t row_pad = 0,
                    uint64_t tail = 0) {
    operand o;
    o.elem = elem_size(type);
    if (nb[0] == 0) {
        nb[0] = o.elem;
        nb[1] = ne[0] * o.elem + row_pad;
        nb[2] = nb[1] * ne[1];
        nb[3] = nb[2] * ne[2];
    }
    uint64_t end = o.elem;
    for (int d = 0; d < 4; ++d) {
        end += uint64_t(ne[d] - 1) * nb[d];
    }
    o.t.type  = type;
    o.t.flags = proto::HTP_TENSOR_COMPUTE;
    o.t.size  = end + tail;
    for (int d = 0; d < 4; ++d) {
        o.t.ne[d] = ne[d];
        o.t.nb[d] = nb[d];
    }
    o.buf = std::make_unique<shared_buffer>(o.t.size);
    std::memset(o.buf->data(), SENTINEL, o.t.size);
    return o;
}

// Runs one op: srcs (nullptr: absent) and dst, the kparams the prepare function gave, GGML's op
// params (copied as the host copies them; the kernels read the kparams). Returns the op's status.
template <class K>
uint32_t run_op(in_process_session & s, uint32_t opcode, std::initializer_list<operand *> srcs, operand & dst,
                const K & kp, const int32_t * params = nullptr) {
    batch_builder          b;
    std::vector<operand *> all;
    std::vector<uint16_t>  src_idx;
    for (operand * o : srcs) {
        if (o == nullptr) {
            src_idx.push_back(proto::HTP_NO_TENSOR);
            continue;
        }
        o->t.bi = b.add_buffer(*o->buf, false);
        src_idx.push_back(b.add_tensor(o->t));
        all.push_back(o);
    }
    dst.t.bi           = b.add_buffer(*dst.buf, false);
    const uint16_t di  = b.add_tensor(dst.t);
    all.push_back(&dst);
    proto::htp_op_desc op = batch_builder::op(opcode, {}, {di});
    for (size_t i = 0; i < src_idx.size(); ++i) {
        op.src[i] = src_idx[i];
    }
    static_assert(sizeof(K) <= sizeof op.kparams);
    std::memcpy(op.kparams, &kp, sizeof kp);
    if (params != nullptr) {
        std::memcpy(op.params, params, sizeof op.params);
    }
    b.add_op(op);
    vnpu::packed_batch batch  = b.pack(1, 0, 0);
    const uint32_t     status = s.process(batch).status;
    for (operand * o : all) {
        htp_iface_munmap(s.handle(), o->buf->fd());
    }
    return status;
}

// Every byte of o outside the elements of shape ne (its rows of ne0 elements) still holds SENTINEL.
inline ::testing::AssertionResult untouched_outside(const operand & o) {
    std::vector<uint8_t> inside(o.t.size, 0);
    for (uint32_t i3 = 0; i3 < o.t.ne[3]; ++i3) {
        for (uint32_t i2 = 0; i2 < o.t.ne[2]; ++i2) {
            for (uint32_t i1 = 0; i1 < o.t.ne[1]; ++i1) {
                for (uint32_t i0 = 0; i0 < o.t.ne[0]; ++i0) {
                    std::memset(inside.data() + o.offset(i0, i1, i2, i3), 1, o.elem);
                }
            }
        }
    }
    for (uint64_t i = 0; i < o.t.size; ++i) {
        if (!inside[i] && o.data()[i] != SENTINEL) {
            return ::testing::AssertionFailure() << "byte " << i << " outside the elements was written: "
                                                 << int(o.data()[i]);
        }
    }
    return ::testing::AssertionSuccess();
}

// GGML's op_params words from floats and ints.
inline int32_t fbits(float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i;
}

// ALiBi's slope of head h of n_head (GGML: m0 = 2^(-max_bias / n_head_log2), m1 = 2^(-max_bias / 2 /
// n_head_log2), slope m0^(h + 1) below n_head_log2, else m1^(2 (h - n_head_log2) + 1)); 1 without ALiBi.
inline double alibi_slope(float max_bias, uint32_t n_head, uint32_t h) {
    if (!(max_bias > 0.0f)) {
        return 1.0;
    }
    uint32_t n_head_log2 = 1;
    while (n_head_log2 * 2 <= n_head) {
        n_head_log2 *= 2;
    }
    const double m0 = std::pow(2.0, -double(max_bias) / n_head_log2);
    const double m1 = std::pow(2.0, -double(max_bias) / 2.0 / n_head_log2);
    return h < n_head_log2 ? std::pow(m0, h + 1) : std::pow(m1, 2 * (h - n_head_log2) + 1);
}

inline std::string shape_str(const proto::htp_tensor & t) {
    return "[" + std::to_string(t.ne[0]) + "," + std::to_string(t.ne[1]) + "," + std::to_string(t.ne[2]) + "," +
           std::to_string(t.ne[3]) + "]";
}

} // namespace htp_op_fixture
