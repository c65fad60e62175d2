// ROPE: NORMAL and NEOX, with and without frequency factors and YaRN, partial rotation, F16,
// strided (fused-QKV style) rows and 4-D inputs; the multi-position modes (MROPE, IMROPE, VISION)
// with model sections; a rotation window at an offset.
#include "op-case.h"

namespace hexnpu::optest {
namespace {

struct rope_variant {
    ggml_type type;
    shape     ne;         // [head_dim, n_head, n_tokens, ne3]
    int       n_dims;
    bool      freq_factors;
    bool      yarn;       // ext_factor 1, freq_scale 1/4: the blend of interpolation and extrapolation
    float     freq_base, attn_factor;
    int64_t   row_pad;
    int32_t   max_pos = 128;  // positions below this
};

// Long contexts: fp32 angles p * theta_scale^j carry rounding of ~|angle| * 6e-8 rad, on the CPU
// (repeated products) and on the NPU (an exponential) alike, ~5e-4 rad at p ~ 8192: rotated
// values differ by that much relative, an NMSE up to ~3e-7.
constexpr tolerance kLongRopeTol{1e-6, 1e-6};

// A multi-position or offset case: sections (MROPE/IMROPE/VISION) or n_offs on top of a variant.
struct rope_multi_variant {
    ggml_type type;
    shape     ne;
    int       n_dims;
    int       mode;
    int       sections[4];
    int       n_offs;
    bool      freq_factors;
    bool      yarn;
};

const char * mode_name(int mode) {
    switch (mode) {
        case GGML_ROPE_TYPE_NORMAL: return "normal";
        case GGML_ROPE_TYPE_NEOX: return "neox";
        case GGML_ROPE_TYPE_MROPE: return "mrope";
        case GGML_ROPE_TYPE_IMROPE: return "imrope";
        default: return "vision";
    }
}

void add_rope_multi_cases(std::vector<op_case> & cases) {
    const rope_multi_variant variants[] = {
        {GGML_TYPE_F32, {128, 12, 5, 1}, 128, GGML_ROPE_TYPE_MROPE, {16, 24, 24, 0}, 0, false, false},   // Qwen2-VL
        {GGML_TYPE_F32, {128, 12, 5, 1}, 128, GGML_ROPE_TYPE_MROPE, {16, 24, 24, 0}, 0, true, true},
        {GGML_TYPE_F16, {128, 4, 3, 1}, 128, GGML_ROPE_TYPE_MROPE, {16, 24, 24, 0}, 0, false, false},
        {GGML_TYPE_F32, {128, 4, 3, 1}, 20, GGML_ROPE_TYPE_MROPE, {6, 6, 6, 0}, 0, false, false},          // 10 of 64 pairs
        {GGML_TYPE_F32, {64, 4, 3, 1}, 64, GGML_ROPE_TYPE_MROPE, {4, 4, 4, 4}, 0, false, false},            // sectors repeat, e used
        {GGML_TYPE_F32, {128, 16, 5, 1}, 128, GGML_ROPE_TYPE_IMROPE, {24, 20, 20, 0}, 0, false, false},   // Qwen3-VL
        {GGML_TYPE_F32, {256, 8, 4, 1}, 64, GGML_ROPE_TYPE_IMROPE, {11, 11, 10, 0}, 0, true, false},      // Qwen3.5
        {GGML_TYPE_F16, {128, 4, 3, 1}, 128, GGML_ROPE_TYPE_IMROPE, {24, 20, 20, 0}, 0, false, true},
        {GGML_TYPE_F32, {80, 16, 6, 1}, 40, GGML_ROPE_TYPE_VISION, {20, 20, 0, 0}, 0, false, false},      // Qwen2-VL ViT
        {GGML_TYPE_F32, {72, 16, 6, 1}, 36, GGML_ROPE_TYPE_VISION, {18, 18, 0, 0}, 0, true, false},       // head size 72
        {GGML_TYPE_F16, {80, 4, 3, 1}, 40, GGML_ROPE_TYPE_VISION, {10, 10, 10, 10}, 0, false, true},
        {GGML_TYPE_F32, {64, 4, 3, 1}, 32, GGML_ROPE_TYPE_VISION, {0, 8, 8, 0}, 0, false, false},         // empty first section
        {GGML_TYPE_F32, {128, 8, 3, 1}, 32, GGML_ROPE_TYPE_NORMAL, {}, 32, false, false},                  // rotated window
        {GGML_TYPE_F32, {128, 8, 3, 1}, 32, GGML_ROPE_TYPE_NEOX, {}, 32, true, true},
        {GGML_TYPE_F16, {128, 8, 3, 1}, 64, GGML_ROPE_TYPE_NEOX, {}, 64, false, false},
        {GGML_TYPE_F32, {80, 4, 3, 1}, 20, GGML_ROPE_TYPE_NORMAL, {}, 6, false, false},
        {GGML_TYPE_F32, {128, 12, 2, 1}, 24, GGML_ROPE_TYPE_MROPE, {8, 8, 8, 0}, 32, false, false},
        {GGML_TYPE_F32, {128, 12, 2, 1}, 24, GGML_ROPE_TYPE_IMROPE, {8, 8, 8, 0}, 2, true, true},
    };
    for (const rope_multi_variant & v : variants) {
        const bool  multi      = (v.mode & GGML_ROPE_TYPE_MROPE) != 0;
        const int   pairs      = v.mode == GGML_ROPE_TYPE_VISION ? v.n_dims : v.n_dims / 2;
        const float freq_scale = v.yarn ? 0.25f : 1.0f;
        const float ext_factor = v.yarn ? 1.0f : 0.0f;
        std::string name = "type=" + type_str(v.type) + ",ne=" + shape_str(v.ne) + ",n_dims=" + std::to_string(v.n_dims) +
                           ",mode=" + mode_name(v.mode);
        if (multi) {
            name += ",sections=" + std::to_string(v.sections[0]) + "/" + std::to_string(v.sections[1]) + "/" +
                    std::to_string(v.sections[2]) + "/" + std::to_string(v.sections[3]);
        }
        name += (v.n_offs ? ",n_offs=" + std::to_string(v.n_offs) : "") + (v.freq_factors ? ",ff" : "") +
                (v.yarn ? ",yarn" : "");
        cases.push_back({name, for_result_type(kSumTol, v.type), [=](case_graph & g) {
                             ggml_tensor * a   = g.input(v.type, v.ne);
                             ggml_tensor * pos = g.input(GGML_TYPE_I32, {(multi ? 4 : 1) * v.ne[2], 1, 1, 1}, indices(128));
                             ggml_tensor * ff  = v.freq_factors ? g.input(GGML_TYPE_F32, {pairs, 1, 1, 1}, uniform(1.0, 4.0))
                                                                : nullptr;
                             ggml_tensor * r =
                                 multi ? ggml_rope_multi(g.ctx(), a, pos, ff, v.n_dims, v.sections, v.mode, 4096, 10000.0f,
                                                         freq_scale, ext_factor, 1.0f, 32.0f, 1.0f)
                                       : ggml_rope_ext(g.ctx(), a, pos, ff, v.n_dims, v.mode, 4096, 10000.0f, freq_scale,
                                                       ext_factor, 1.0f, 32.0f, 1.0f);
                             return v.n_offs ? ggml_rope_set_offset(r, v.n_offs) : r;
                         }});
    }
}

} // namespace

void add_rope_cases(std::vector<op_case> & cases) {
    // The YaRN correction dimensions for these n_dims, bases and betas (32, 1) with n_ctx_orig 4096
    // lie well away from integers, so floor/ceil give the same dims in fp32 and in double.
    const rope_variant variants[] = {
        {GGML_TYPE_F32, {64, 4, 5, 1}, 64, false, false, 10000.0f, 1.0f, 0},
        {GGML_TYPE_F32, {64, 4, 5, 1}, 64, true, false, 10000.0f, 1.0f, 0},
        {GGML_TYPE_F32, {64, 4, 5, 1}, 64, false, true, 10000.0f, 1.0f, 0},
        {GGML_TYPE_F32, {128, 2, 3, 1}, 128, true, true, 500000.0f, 0.8f, 0},
        {GGML_TYPE_F32, {128, 3, 4, 1}, 64, false, false, 10000.0f, 1.0f, 0},  // half the dims rotate
        {GGML_TYPE_F32, {80, 3, 7, 2}, 80, false, false, 10000.0f, 1.0f, 0},   // 4-D, head size 80
        {GGML_TYPE_F32, {80, 4, 5, 1}, 32, false, false, 10000.0f, 1.0f, 0},   // partial rotary (phi-2's 32 of 80)
        {GGML_TYPE_F32, {128, 2, 3, 1}, 96, true, true, 500000.0f, 0.8f, 0},   // 48 pairs, YaRN and factors
        {GGML_TYPE_F16, {80, 3, 4, 1}, 80, false, false, 10000.0f, 1.0f, 0},
        {GGML_TYPE_F32, {64, 4, 5, 1}, 64, false, false, 10000.0f, 1.0f, 24},  // strided rows
        {GGML_TYPE_F16, {64, 4, 5, 1}, 64, false, false, 10000.0f, 1.0f, 0},
        {GGML_TYPE_F32, {256, 4, 9, 1}, 256, false, false, 1000000.0f, 1.0f, 0, 8192},  // Gemma 3's heads, far positions
    };
    for (const int mode : {GGML_ROPE_TYPE_NORMAL, GGML_ROPE_TYPE_NEOX}) {
        for (const rope_variant & v : variants) {
            const float freq_scale = v.yarn ? 0.25f : 1.0f;
            const float ext_factor = v.yarn ? 1.0f : 0.0f;
            cases.push_back({"type=" + type_str(v.type) + ",ne=" + shape_str(v.ne) + ",n_dims=" + std::to_string(v.n_dims) +
                                 ",mode=" + (mode == GGML_ROPE_TYPE_NEOX ? "neox" : "normal") +
                                 ",freq_base=" + num_str(v.freq_base) + ",freq_scale=" + num_str(freq_scale) +
                                 ",ext_factor=" + num_str(ext_factor) + ",attn_factor=" + num_str(v.attn_factor) +
                                 (v.freq_factors ? ",ff" : "") + (v.row_pad ? ",row_pad=" + std::to_string(v.row_pad) : "") +
                                 (v.max_pos != 128 ? ",pos<" + std::to_string(v.max_pos) : ""),
                             for_result_type(v.max_pos > 128 ? kLongRopeTol : kSumTol, v.type), [=](case_graph & g) {
                                 ggml_tensor * a = v.row_pad ? g.strided_input(v.type, v.ne, v.row_pad) : g.input(v.type, v.ne);
                                 // Positions below 128 keep fp32 angles accurate to ~1e-5 rad.
                                 ggml_tensor * pos = g.input(GGML_TYPE_I32, {v.ne[2], 1, 1, 1}, indices(v.max_pos));
                                 ggml_tensor * ff  = v.freq_factors
                                                         ? g.input(GGML_TYPE_F32, {v.n_dims / 2, 1, 1, 1}, uniform(1.0, 4.0))
                                                         : nullptr;
                                 return ggml_rope_ext(g.ctx(), a, pos, ff, v.n_dims, mode, 4096, v.freq_base, freq_scale,
                                                      ext_factor, v.attn_factor, 32.0f, 1.0f);
                             }});
        }
    }
    add_rope_multi_cases(cases);
}

} // namespace hexnpu::optest
