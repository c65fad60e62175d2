// The GGML type table against formats.md §1.1 (ids, block sizes, bytes per block).
#include "hexnpu/ggml-types.h"

#include <gtest/gtest.h>

using namespace hexnpu;

TEST(TypeTraits, SizesMatchFormatsTable) {
    struct row { ggml_type t; const char * name; int64_t blck; size_t bytes; bool quant; };
    const row rows[] = {
        {GGML_TYPE_F32, "f32", 1, 4, false},       {GGML_TYPE_F16, "f16", 1, 2, false},
        {GGML_TYPE_BF16, "bf16", 1, 2, false},     {GGML_TYPE_Q4_0, "q4_0", 32, 18, true},
        {GGML_TYPE_Q4_1, "q4_1", 32, 20, true},    {GGML_TYPE_Q5_0, "q5_0", 32, 22, true},
        {GGML_TYPE_Q5_1, "q5_1", 32, 24, true},    {GGML_TYPE_Q8_0, "q8_0", 32, 34, true},
        {GGML_TYPE_Q8_1, "q8_1", 32, 36, true},    {GGML_TYPE_Q2_K, "q2_K", 256, 84, true},
        {GGML_TYPE_Q3_K, "q3_K", 256, 110, true},  {GGML_TYPE_Q4_K, "q4_K", 256, 144, true},
        {GGML_TYPE_Q5_K, "q5_K", 256, 176, true},  {GGML_TYPE_Q6_K, "q6_K", 256, 210, true},
        {GGML_TYPE_IQ4_NL, "iq4_nl", 32, 18, true}, {GGML_TYPE_MXFP4, "mxfp4", 32, 17, true},
        {GGML_TYPE_Q1_0, "q1_0", 128, 18, true},   {GGML_TYPE_Q2_0, "q2_0", 64, 18, true},
        {GGML_TYPE_I32, "i32", 1, 4, false},       {GGML_TYPE_F64, "f64", 1, 8, false},
    };
    for (const row & r : rows) {
        SCOPED_TRACE(r.name);
        EXPECT_STREQ(ggml_type_name(r.t), r.name);
        EXPECT_EQ(ggml_blck_size(r.t), r.blck);
        EXPECT_EQ(ggml_type_size(r.t), r.bytes);
        EXPECT_EQ(ggml_is_quantized(r.t), r.quant);
        EXPECT_TRUE(ggml_type_is_valid(r.t));
    }
    EXPECT_EQ(ggml_row_size(GGML_TYPE_Q4_K, 4096), 16u * 144u);
    EXPECT_EQ(int(GGML_TYPE_COUNT), 43);
}

TEST(TypeTraits, RetiredIdsAreNamedButInvalid) {
    for (int id : {4, 5, 31, 32, 33, 36, 37, 38}) {
        const ggml_type_traits * t = ggml_get_type_traits(id);
        ASSERT_NE(t, nullptr) << id;
        EXPECT_TRUE(t->retired) << id;
        EXPECT_FALSE(ggml_type_is_valid(id)) << id;
    }
    EXPECT_STREQ(ggml_get_type_traits(31)->type_name, "q4_0_4_4");
    EXPECT_EQ(ggml_get_type_traits(-1), nullptr);
    EXPECT_EQ(ggml_get_type_traits(GGML_TYPE_COUNT), nullptr);
    EXPECT_FALSE(ggml_type_is_valid(43));
}

TEST(TypeTraits, NamesAreCaseInsensitiveAndUnique) {
    EXPECT_EQ(ggml_type_from_name("Q4_K"), GGML_TYPE_Q4_K);
    EXPECT_EQ(ggml_type_from_name("q4_k"), GGML_TYPE_Q4_K);
    EXPECT_EQ(ggml_type_from_name("BF16"), GGML_TYPE_BF16);
    EXPECT_EQ(ggml_type_from_name("IQ4_nl"), GGML_TYPE_IQ4_NL);
    EXPECT_FALSE(ggml_type_from_name("q4_0_4_4").has_value());  // retired: not a valid target
    EXPECT_FALSE(ggml_type_from_name("q4").has_value());
    EXPECT_FALSE(ggml_type_from_name("").has_value());
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        if (ggml_type_is_valid(id)) {
            EXPECT_EQ(ggml_type_from_name(ggml_get_type_traits(id)->type_name), ggml_type(id));
        }
    }
}

TEST(TypeTraits, ConvertibleTypesHaveBothPaths) {
    const ggml_type expected[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1,
                                  GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4,
                                  GGML_TYPE_Q1_0, GGML_TYPE_Q2_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
                                  GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
    int n = 0;
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        const ggml_type_traits * t = ggml_get_type_traits(id);
        const bool has = t->to_float && t->from_float && t->to_float_ref && t->from_float_ref;
        n += has;
        EXPECT_EQ(bool(t->to_float), has) << t->type_name;
    }
    EXPECT_EQ(n, int(std::size(expected)));
    for (ggml_type t : expected) {
        EXPECT_NE(ggml_get_type_traits(t)->to_float, nullptr) << ggml_type_name(t);
    }
}
