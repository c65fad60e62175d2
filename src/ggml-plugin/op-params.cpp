#include "op-params.h"

namespace hexnpu::ggml_plugin {
namespace {

namespace ids = ggml_abi::op_ids;

constexpr uint32_t words(std::initializer_list<int> list) {
    uint32_t mask = 0;
    for (int w : list) {
        mask |= 1u << w;
    }
    return mask;
}

// The op_params words hexnpu reads, per ggml op (ggml.c of the pinned version: each op's
// constructor and setters). A word outside its op's set must be zero.
struct op_words {
    int32_t  op;
    uint32_t read;
};

constexpr op_words kWords[] = {
    // No op_params at all in this ggml: DUP ADD SUB MUL DIV SQR SQRT LOG SIN COS SUM SUM_ROWS CUMSUM
    // MEAN ARGMAX REPEAT CONT RESHAPE TRANSPOSE GET_ROWS ADD_ID CPY SET_ROWS TOP_K (k is dst->ne[0]) DIAG
    // SSM_CONV SOLVE_TRI (its left/lower/uni flags are asserted, not stored).
    {ids::CONCAT, words({0})},                        // dim
    {ids::NORM, words({0})},                          // eps
    {ids::RMS_NORM, words({0})},
    {ids::L2_NORM, words({0})},
    {ids::MUL_MAT, words({0, 1, 3})},                 // acc precision, op hint, src1 precision
    {ids::MUL_MAT_ID, words({0, 3})},
    {ids::SCALE, words({0, 1})},                      // s, bias
    {ids::CLAMP, words({0, 1})},                      // min, max
    {ids::FILL, words({0})},                          // value
    {ids::LEAKY_RELU, words({0})},                    // negative slope
    {ids::ROLL, words({0, 1, 2, 3})},                 // the shifts
    {ids::IM2COL, words({0, 1, 2, 3, 4, 5, 6})},      // s0, s1, p0, p1, d0, d1, is_2D
    {ids::TRI, words({0})},                           // the triangle kept
    {ids::GATED_DELTA_NET, words({0})},               // K, the states kept
    {ids::VIEW, words({0, 1})},                       // byte offset (hexnpu reads view_offs)
    {ids::PERMUTE, words({0, 1, 2, 3})},              // axes (hexnpu reads ne/nb)
    {ids::SOFT_MAX, words({0, 1})},                   // scale, max_bias (sinks: src[2])
    // 0 and 3 unused (n_past, n_ctx), 1 n_dims, 2 mode, 4 n_ctx_orig, 5-10 freq_base, freq_scale,
    // ext_factor, attn_factor, beta_fast, beta_slow, 11-14 the MROPE / IMROPE / VISION sections,
    // 15 the rotated window's offset (ggml_rope_set_offset).
    {ids::ROPE, words({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})},
    // Left and right pads of each dim. Not 8: circular (wrap-around) padding.
    {ids::PAD, words({0, 1, 2, 3, 4, 5, 6, 7})},
    {ids::ARGSORT, words({0})},                       // order
    // scale, max_bias, logit_softcap, precision (llama.cpp always asks F32; both kernels sum in
    // fp32), n_kv_max (a hint that finite mask entries are few: dense evaluation is exact).
    {ids::FLASH_ATTN_EXT, words({0, 1, 2, 3, 4})},
    {ids::UNARY, words({0})},                         // the unary op
    {ids::GLU, words({0, 1, 2, 3})},                  // the GLU op, swapped, SWIGLU_OAI's alpha, its and SWIGLU_CLAMP's limit
};

constexpr int32_t kPrecF32 = 10, kPrecBf16 = 15, kPrecF16 = 20;

std::string word_text(int w, int32_t value) {
    return "op_params[" + std::to_string(w) + "] = " + std::to_string(value);
}

} // namespace

std::string unsupported_op_params(const ggml_abi::tensor * t) {
    uint32_t read = 0;
    for (const op_words & ow : kWords) {
        if (ow.op == t->op) {
            read = ow.read;
        }
    }
    constexpr int kWordCount = ggml_abi::kMaxOpParams / sizeof(int32_t);
    for (int w = 0; w < kWordCount; ++w) {
        if (t->op_params[w] != 0 && (read & (1u << w)) == 0) {
            return word_text(w, t->op_params[w]) + " is a parameter of this op hexnpu does not implement";
        }
    }
    // src1's precision (ggml_prec_set_src): the NPU quantizes activations to 8 bits, or rounds them
    // to fp16 on the HMX unit, so it cannot promise F32, BF16 or F16 (Q8 and Q4 it exceeds).
    if (t->op == ids::MUL_MAT || t->op == ids::MUL_MAT_ID) {
        const int32_t src1_prec = t->op_params[3];
        if (src1_prec == kPrecF32 || src1_prec == kPrecBf16 || src1_prec == kPrecF16) {
            return word_text(3, src1_prec) + ": src1 kept at that precision, which the NPU's matmuls do not";
        }
    }
    return "";
}

} // namespace hexnpu::ggml_plugin
