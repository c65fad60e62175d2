#include "hexnpu/ggml-types.h"

#include "quant-blocks.h"
#include "quants.h"
#include "strings.h"

#include <array>

namespace hexnpu {
namespace {

#define QUANT_FNS(T) \
    dequantize_row_##T, quantize_row_##T, dequantize_row_##T##_ref, quantize_row_##T##_ref, dot_row_##T
#define NO_FNS       nullptr, nullptr, nullptr, nullptr, nullptr

// Block and byte sizes of the types hexnpu only reads, stores and copies come from GGML's
// ggml_blck_size/ggml_type_size; retired ids keep their old names so files from the wild are named.
constexpr std::array<ggml_type_traits, GGML_TYPE_COUNT> kTraits = {{
    /*  0 */ {"f32", 1, 4, false, false, QUANT_FNS(f32)},
    /*  1 */ {"f16", 1, 2, false, false, QUANT_FNS(f16)},
    /*  2 */ {"q4_0", QK4_0, sizeof(block_q4_0), true, false, QUANT_FNS(q4_0)},
    /*  3 */ {"q4_1", QK4_1, sizeof(block_q4_1), true, false, QUANT_FNS(q4_1)},
    /*  4 */ {"q4_2", 0, 0, true, true, NO_FNS},
    /*  5 */ {"q4_3", 0, 0, true, true, NO_FNS},
    /*  6 */ {"q5_0", QK5_0, sizeof(block_q5_0), true, false, QUANT_FNS(q5_0)},
    /*  7 */ {"q5_1", QK5_1, sizeof(block_q5_1), true, false, QUANT_FNS(q5_1)},
    /*  8 */ {"q8_0", QK8_0, sizeof(block_q8_0), true, false, QUANT_FNS(q8_0)},
    /*  9 */ {"q8_1", 32, 36, true, false, NO_FNS},
    /* 10 */ {"q2_K", QK_K, sizeof(block_q2_K), true, false, QUANT_FNS(q2_K)},
    /* 11 */ {"q3_K", QK_K, sizeof(block_q3_K), true, false, QUANT_FNS(q3_K)},
    /* 12 */ {"q4_K", QK_K, sizeof(block_q4_K), true, false, QUANT_FNS(q4_K)},
    /* 13 */ {"q5_K", QK_K, sizeof(block_q5_K), true, false, QUANT_FNS(q5_K)},
    /* 14 */ {"q6_K", QK_K, sizeof(block_q6_K), true, false, QUANT_FNS(q6_K)},
    /* 15 */ {"q8_K", QK_K, 292, true, false, NO_FNS},
    /* 16 */ {"iq2_xxs", QK_K, 66, true, false, NO_FNS},
    /* 17 */ {"iq2_xs", QK_K, 74, true, false, NO_FNS},
    /* 18 */ {"iq3_xxs", QK_K, 98, true, false, NO_FNS},
    /* 19 */ {"iq1_s", QK_K, 50, true, false, NO_FNS},
    /* 20 */ {"iq4_nl", QK4_NL, sizeof(block_iq4_nl), true, false, QUANT_FNS(iq4_nl)},
    /* 21 */ {"iq3_s", QK_K, 110, true, false, NO_FNS},
    /* 22 */ {"iq2_s", QK_K, 82, true, false, NO_FNS},
    /* 23 */ {"iq4_xs", QK_K, 136, true, false, NO_FNS},
    /* 24 */ {"i8", 1, 1, false, false, NO_FNS},
    /* 25 */ {"i16", 1, 2, false, false, NO_FNS},
    /* 26 */ {"i32", 1, 4, false, false, NO_FNS},
    /* 27 */ {"i64", 1, 8, false, false, NO_FNS},
    /* 28 */ {"f64", 1, 8, false, false, NO_FNS},
    /* 29 */ {"iq1_m", QK_K, 56, true, false, NO_FNS},
    /* 30 */ {"bf16", 1, 2, false, false, QUANT_FNS(bf16)},
    /* 31 */ {"q4_0_4_4", 0, 0, true, true, NO_FNS},
    /* 32 */ {"q4_0_4_8", 0, 0, true, true, NO_FNS},
    /* 33 */ {"q4_0_8_8", 0, 0, true, true, NO_FNS},
    /* 34 */ {"tq1_0", QK_K, 54, true, false, NO_FNS},
    /* 35 */ {"tq2_0", QK_K, 66, true, false, NO_FNS},
    /* 36 */ {"iq4_nl_4_4", 0, 0, true, true, NO_FNS},
    /* 37 */ {"iq4_nl_4_8", 0, 0, true, true, NO_FNS},
    /* 38 */ {"iq4_nl_8_8", 0, 0, true, true, NO_FNS},
    /* 39 */ {"mxfp4", QK_MXFP4, sizeof(block_mxfp4), true, false, QUANT_FNS(mxfp4)},
    /* 40 */ {"nvfp4", 64, 36, true, false, NO_FNS},
    /* 41 */ {"q1_0", QK1_0, sizeof(block_q1_0), true, false, QUANT_FNS(q1_0)},
    /* 42 */ {"q2_0", QK2_0, sizeof(block_q2_0), true, false, QUANT_FNS(q2_0)},
}};

#undef QUANT_FNS
#undef NO_FNS

} // namespace

const ggml_type_traits * ggml_get_type_traits(int64_t type_id) {
    if (type_id < 0 || type_id >= GGML_TYPE_COUNT) {
        return nullptr;
    }
    return &kTraits[size_t(type_id)];
}

bool ggml_type_is_valid(int64_t type_id) {
    const ggml_type_traits * t = ggml_get_type_traits(type_id);
    return t && !t->retired;
}

const char * ggml_type_name(ggml_type type) {
    const ggml_type_traits * t = ggml_get_type_traits(type);
    return t ? t->type_name : "?";
}

int64_t ggml_blck_size(ggml_type type) { return kTraits.at(size_t(type)).blck_size; }

size_t ggml_type_size(ggml_type type) { return kTraits.at(size_t(type)).type_size; }

bool ggml_is_quantized(ggml_type type) { return kTraits.at(size_t(type)).is_quantized; }

size_t ggml_row_size(ggml_type type, int64_t ne) {
    const ggml_type_traits & t = kTraits.at(size_t(type));
    return t.type_size * size_t(ne / t.blck_size);
}

std::optional<ggml_type> ggml_type_from_name(std::string_view name) {
    for (size_t i = 0; i < kTraits.size(); ++i) {
        if (!kTraits[i].retired && equal_ignore_case(name, kTraits[i].type_name)) {
            return ggml_type(i);
        }
    }
    return std::nullopt;
}

} // namespace hexnpu
