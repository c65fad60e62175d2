// GGUF reader and writer: byte layout against hand-assembled files (formats.md §2), write->read
// round trips of every value and tensor type, zero-copy views, the file path, and robustness:
// every truncation and random byte flips must give gguf::error, never a crash.
#include "hexnpu/gguf.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using namespace hexnpu;
using gguf::reader;
using gguf::value;
using gguf::value_type;
using gguf::writer;

// Little-endian byte assembly for hand-made files.
struct bytes_builder {
    std::vector<uint8_t> out;

    bytes_builder & u32(uint32_t v) { return raw(&v, 4); }
    bytes_builder & u64(uint64_t v) { return raw(&v, 8); }
    bytes_builder & f32(float v) { return raw(&v, 4); }
    bytes_builder & text(std::string_view s) { return raw(s.data(), s.size()); }
    bytes_builder & str(std::string_view s) { return u64(s.size()).text(s); }
    bytes_builder & zeros(size_t n) {
        out.resize(out.size() + n, 0);
        return *this;
    }
    bytes_builder & raw(const void * p, size_t n) {
        const auto * b = static_cast<const uint8_t *>(p);
        out.insert(out.end(), b, b + n);
        return *this;
    }
};

// general.architecture = "ab", one f32 tensor "t" of shape [2] holding {1, 2}. Worked out from
// formats.md §2: 24-byte header, KV at 24..66, tensor info at 66..99, data section at 128.
std::vector<uint8_t> hand_made_file(uint32_t version = 3) {
    bytes_builder b;
    b.text("GGUF").u32(version).u64(1).u64(1);
    b.str("general.architecture").u32(8).str("ab");
    b.str("t").u32(1).u64(2).u32(0).u64(0);
    b.zeros(128 - 99);
    b.f32(1.0f).f32(2.0f).zeros(24);  // the writer pads every tensor, the last one included
    return b.out;
}

std::vector<uint8_t> random_bytes(std::mt19937_64 & rng, size_t n) {
    std::vector<uint8_t> v(n);
    for (uint8_t & x : v) {
        x = uint8_t(rng());
    }
    return v;
}

// A file with a bit of everything, whose last tensor ends exactly at the end of the file (its
// size is a multiple of the alignment), so that cutting any byte off must be an error.
std::vector<uint8_t> small_valid_file() {
    static std::vector<float> embd(64 * 3, 0.5f);
    static std::vector<uint8_t> q4(18 * 2 * 4, 0x11);
    static std::vector<uint16_t> half(32, 0x3c00);
    writer w;
    w.set("general.architecture", value::from_string("llama"));
    w.set("general.quantization_version", value::from_u32(2));
    w.set("llama.rope.freq_base", value::from_f32(10000.0f));
    w.set("tokenizer.ggml.add_bos_token", value::from_bool(true));
    w.set("tokenizer.ggml.tokens", value::from_strings({"<s>", "</s>", "h\xc3\xa9llo"}));
    w.set("tokenizer.ggml.scores", value::from_array(value_type::FLOAT32, 2, std::vector<uint8_t>(8, 0)));
    w.set("tokenizer.ggml.token_type", value::from_array(value_type::INT32, 1, std::vector<uint8_t>(4, 1)));
    w.set("general.flags", value::from_array(value_type::BOOL, 2, {0, 1}));
    const int64_t embd_ne[] = {64, 3};
    const int64_t q4_ne[]   = {64, 4};
    const int64_t half_ne[] = {32};
    w.add_tensor("token_embd.weight", GGML_TYPE_F32, embd_ne, embd.data());
    w.add_tensor("blk.0.attn_q.weight", GGML_TYPE_Q4_0, q4_ne, q4.data());
    w.add_tensor("output_norm.weight", GGML_TYPE_F16, half_ne, half.data());
    return w.write_to_memory();
}

// Touches everything a parsed file hands out, the way a consumer would (reads land in a volatile
// so that they happen, and a sanitizer build sees any that are out of bounds).
void walk(const reader & r) {
    volatile size_t sink = 0;
    for (const gguf::metadata_entry & e : r.metadata()) {
        sink = sink + e.val.to_display().size();
        EXPECT_EQ(r.find(e.key), &e.val);
    }
    for (const gguf::tensor_info & t : r.tensors()) {
        ASSERT_LE(t.file_offset + t.nbytes, r.file_size());
        const std::span<const uint8_t> data = r.tensor_data(t);
        ASSERT_EQ(data.size(), t.nbytes);
        sink = sink + data.front() + data.back();
        EXPECT_EQ(r.find_tensor(t.name), &t);
    }
}

fs::path temp_path(const std::string & name) {
    return fs::temp_directory_path() / ("hexnpu-test-gguf-" + std::to_string(::getpid()) + "-" + name);
}

// ---------------------------------------------------------------------------------------------
// Byte layout against hand-assembled files

TEST(GgufLayout, WriterProducesTheHandAssembledBytes) {
    const float   data[] = {1.0f, 2.0f};
    const int64_t ne[]   = {2};
    writer        w;
    w.set("general.architecture", value::from_string("ab"));
    w.add_tensor("t", GGML_TYPE_F32, ne, data);
    EXPECT_EQ(w.write_to_memory(), hand_made_file());
}

TEST(GgufLayout, ReaderParsesTheHandAssembledFile) {
    const std::vector<uint8_t> file = hand_made_file();
    const reader               r    = reader::from_memory(file.data(), file.size());
    EXPECT_EQ(r.version(), 3u);
    EXPECT_EQ(r.alignment(), 32u);
    EXPECT_EQ(r.data_offset(), 128u);
    EXPECT_EQ(r.file_size(), 160u);
    ASSERT_EQ(r.metadata().size(), 1u);
    EXPECT_EQ(r.metadata()[0].key, "general.architecture");
    ASSERT_NE(r.find("general.architecture"), nullptr);
    EXPECT_EQ(*r.find("general.architecture")->as_string(), "ab");
    EXPECT_EQ(r.find("general.name"), nullptr);
    ASSERT_EQ(r.tensors().size(), 1u);
    const gguf::tensor_info & t = r.tensors()[0];
    EXPECT_EQ(t.name, "t");
    EXPECT_EQ(t.type, GGML_TYPE_F32);
    EXPECT_EQ(t.n_dims, 1u);
    EXPECT_EQ(t.ne, (std::array<int64_t, 4>{2, 1, 1, 1}));
    EXPECT_EQ(t.offset, 0u);
    EXPECT_EQ(t.nbytes, 8u);
    EXPECT_EQ(t.info_offset, 66u);
    EXPECT_EQ(t.file_offset, 128u);
    EXPECT_EQ(r.find_tensor("t"), &t);
    EXPECT_EQ(r.find_tensor("u"), nullptr);
    float got[2];
    std::memcpy(got, r.tensor_data(t).data(), 8);
    EXPECT_EQ(got[0], 1.0f);
    EXPECT_EQ(got[1], 2.0f);
}

TEST(GgufLayout, VersionTwoIsAccepted) {
    const std::vector<uint8_t> file = hand_made_file(2);
    EXPECT_EQ(reader::from_memory(file.data(), file.size()).version(), 2u);
}

TEST(GgufLayout, TrailingPaddingOfTheLastTensorIsOptional) {
    std::vector<uint8_t> file = hand_made_file();
    file.resize(136);  // data section start + 8 bytes of tensor data
    EXPECT_EQ(reader::from_memory(file.data(), file.size()).tensors().size(), 1u);
}

TEST(GgufLayout, WriterTrimsTrailingUnitDimensionsLikeGgml) {
    const std::vector<uint8_t> data(16 * 4);
    struct shape_case {
        std::vector<int64_t> ne;
        uint32_t             n_dims;
    };
    const shape_case cases[] = {
        {{16}, 1}, {{16, 1}, 1}, {{16, 1, 1, 1}, 1}, {{8, 2}, 2}, {{8, 2, 1}, 2},
        {{4, 1, 4}, 3}, {{4, 1, 1, 4}, 4}, {{1, 1, 1, 16}, 4},
    };
    for (const shape_case & c : cases) {
        writer w;
        w.add_tensor("t", GGML_TYPE_F32, c.ne, data.data());
        const std::vector<uint8_t> file = w.write_to_memory();
        // n_dims is the u32 after the 24-byte header and the name (u64 length + "t").
        uint32_t stored_n_dims;
        std::memcpy(&stored_n_dims, file.data() + 24 + 8 + 1, 4);
        EXPECT_EQ(stored_n_dims, c.n_dims) << ::testing::PrintToString(c.ne);
        const reader r = reader::from_memory(file.data(), file.size());
        EXPECT_EQ(r.tensors()[0].n_dims, c.n_dims);
        std::array<int64_t, 4> expected{1, 1, 1, 1};
        std::copy(c.ne.begin(), c.ne.end(), expected.begin());
        EXPECT_EQ(r.tensors()[0].ne, expected);
    }
}

// ---------------------------------------------------------------------------------------------
// Metadata round trips

template <typename T>
value array_of(value_type type, std::initializer_list<T> elems) {
    std::vector<uint8_t> bytes(elems.size() * sizeof(T));
    std::memcpy(bytes.data(), std::data(elems), bytes.size());
    return value::from_array(type, elems.size(), std::move(bytes));
}

TEST(GgufMetadata, EveryValueTypeRoundTrips) {
    const float  snan_f32 = std::bit_cast<float>(0x7f800001u);  // signalling NaN: bits must survive
    const double nan_f64  = std::bit_cast<double>(0xfff8000000000123ull);
    std::mt19937_64 rng(1);

    std::vector<gguf::metadata_entry> entries = {
        {"u8", value::from_u8(255)},
        {"i8", value::from_i8(-128)},
        {"u16", value::from_u16(65535)},
        {"i16", value::from_i16(-32768)},
        {"u32", value::from_u32(4294967295u)},
        {"i32", value::from_i32(std::numeric_limits<int32_t>::min())},
        {"u64", value::from_u64(std::numeric_limits<uint64_t>::max())},
        {"i64", value::from_i64(std::numeric_limits<int64_t>::min())},
        {"f32", value::from_f32(-0.0f)},
        {"f32.snan", value::from_f32(snan_f32)},
        {"f64", value::from_f64(1e-310)},
        {"f64.nan", value::from_f64(nan_f64)},
        {"bool.true", value::from_bool(true)},
        {"bool.false", value::from_bool(false)},
        {"str.empty", value::from_string("")},
        {"str.unicode", value::from_string("h\xc3\xa9llo w\xc3\xb6rld \xe2\x9c\x93 \xf0\x9f\xa6\x99")},
        {"str.nul", value::from_string(std::string("a\0b\n", 4))},
        {"arr.u8", array_of<uint8_t>(value_type::UINT8, {0, 1, 255})},
        {"arr.i8", array_of<int8_t>(value_type::INT8, {-128, 0, 127})},
        {"arr.u16", array_of<uint16_t>(value_type::UINT16, {0, 65535})},
        {"arr.i16", array_of<int16_t>(value_type::INT16, {-32768, 7})},
        {"arr.u32", array_of<uint32_t>(value_type::UINT32, {1, 2, 3, 4294967295u})},
        {"arr.i32", array_of<int32_t>(value_type::INT32, {-1, 0, 1})},
        {"arr.f32", array_of<float>(value_type::FLOAT32, {1.5f, -0.0f, std::numeric_limits<float>::infinity()})},
        {"arr.bool", array_of<uint8_t>(value_type::BOOL, {1, 0, 0, 1})},
        {"arr.u64", array_of<uint64_t>(value_type::UINT64, {0, std::numeric_limits<uint64_t>::max()})},
        {"arr.i64", array_of<int64_t>(value_type::INT64, {std::numeric_limits<int64_t>::min(), 5})},
        {"arr.f64", array_of<double>(value_type::FLOAT64, {3.25, nan_f64})},
        {"arr.str", value::from_strings({"", "a", "\xe2\x9c\x93", std::string(300, 'x'), std::string("\0", 1)})},
        {"arr.empty.u32", value::from_array(value_type::UINT32, 0, {})},
        {"arr.empty.str", value::from_strings({})},
        {"arr.big.i32", value::from_array(value_type::INT32, 10000, random_bytes(rng, 40000))},
        {"k\xc3\xa9y with spaces", value::from_u8(1)},
    };
    writer w;
    for (const gguf::metadata_entry & e : entries) {
        w.set(e.key, e.val);
    }
    const std::vector<uint8_t> file = w.write_to_memory();
    const reader               r    = reader::from_memory(file.data(), file.size());
    ASSERT_EQ(r.metadata().size(), entries.size());
    for (size_t i = 0; i < entries.size(); ++i) {
        SCOPED_TRACE(entries[i].key);
        EXPECT_EQ(r.metadata()[i].key, entries[i].key);
        EXPECT_TRUE(r.metadata()[i].val == entries[i].val) << r.metadata()[i].val.to_display();
        ASSERT_NE(r.find(entries[i].key), nullptr);
    }
    EXPECT_EQ(std::bit_cast<uint32_t>(float(*r.find("f32")->as_float())), 0x80000000u);
    const std::span<const uint8_t> snan = r.find("f32.snan")->scalar_bytes();
    ASSERT_EQ(snan.size(), 4u);
    EXPECT_EQ(snan[0], 0x01);
    EXPECT_EQ(snan[3], 0x7f);
    EXPECT_EQ(r.tensors().size(), 0u);
}

TEST(GgufMetadata, SetReplacesInPlaceAndRemoveDeletes) {
    writer w;
    w.set("a", value::from_u32(1));
    w.set("b", value::from_u32(2));
    w.set("c", value::from_u32(3));
    w.set("b", value::from_string("two"));
    EXPECT_TRUE(w.remove("a"));
    EXPECT_FALSE(w.remove("a"));
    w.set("a", value::from_u32(4));
    const std::vector<uint8_t> file = w.write_to_memory();
    const reader               r    = reader::from_memory(file.data(), file.size());
    ASSERT_EQ(r.metadata().size(), 3u);
    EXPECT_EQ(r.metadata()[0].key, "b");
    EXPECT_EQ(*r.metadata()[0].val.as_string(), "two");
    EXPECT_EQ(r.metadata()[1].key, "c");
    EXPECT_EQ(r.metadata()[2].key, "a");
    EXPECT_EQ(*r.metadata()[2].val.as_uint(), 4u);
}

TEST(GgufMetadata, WriterRejectsBadKeysAndAlignments) {
    writer w;
    EXPECT_THROW(w.set("", value::from_u8(0)), std::invalid_argument);
    EXPECT_THROW(w.set(std::string(65536, 'k'), value::from_u8(0)), std::invalid_argument);
    w.set(std::string(65535, 'k'), value::from_u8(0));
    EXPECT_THROW(w.set("general.alignment", value::from_u64(64)), std::invalid_argument);
    EXPECT_THROW(w.set("general.alignment", value::from_u32(48)), std::invalid_argument);
    EXPECT_THROW(w.set("general.alignment", value::from_u32(0)), std::invalid_argument);
    EXPECT_THROW(w.set_alignment(0), std::invalid_argument);
    EXPECT_THROW(w.set_alignment(96), std::invalid_argument);
    const std::vector<uint8_t> file = w.write_to_memory();
    const reader               r    = reader::from_memory(file.data(), file.size());
    EXPECT_EQ(r.metadata().size(), 1u);
    EXPECT_EQ(r.alignment(), 32u);
}

// ---------------------------------------------------------------------------------------------
// Value API

TEST(GgufValue, NumericAccessorsConvertOnlyWhenExact) {
    EXPECT_EQ(value::from_i8(-1).as_uint(), std::nullopt);
    EXPECT_EQ(value::from_i8(-1).as_int(), -1);
    EXPECT_EQ(value::from_i16(7).as_uint(), 7u);
    EXPECT_EQ(value::from_u64(std::numeric_limits<uint64_t>::max()).as_int(), std::nullopt);
    EXPECT_EQ(value::from_u64(std::numeric_limits<uint64_t>::max()).as_uint(), std::numeric_limits<uint64_t>::max());
    EXPECT_EQ(value::from_u32(3).as_float(), 3.0);
    EXPECT_EQ(value::from_f32(0.5f).as_float(), 0.5);
    EXPECT_EQ(value::from_f32(0.5f).as_int(), std::nullopt);
    EXPECT_EQ(value::from_bool(true).as_bool(), true);
    EXPECT_EQ(value::from_bool(true).as_uint(), std::nullopt);
    EXPECT_EQ(value::from_u8(1).as_bool(), std::nullopt);
    EXPECT_EQ(value::from_string("x").as_uint(), std::nullopt);
    EXPECT_EQ(value::from_string("x").as_strings(), nullptr);
    EXPECT_EQ(value::from_strings({"x"}).as_string(), nullptr);
    EXPECT_EQ(value::from_strings({"x", "y"}).array_size(), 2u);
    EXPECT_TRUE(value::from_strings({"x"}).array_bytes().empty());
    EXPECT_EQ(value::from_u32(1).array_size(), 0u);
    EXPECT_EQ(value().as_uint(), 0u);
}

TEST(GgufValue, DisplayIsReadable) {
    EXPECT_EQ(value::from_f32(0.1f).to_display(), "0.1");
    EXPECT_EQ(value::from_f64(1e300).to_display(), "1e+300");
    EXPECT_EQ(value::from_i64(-42).to_display(), "-42");
    EXPECT_EQ(value::from_u64(18446744073709551615ull).to_display(), "18446744073709551615");
    EXPECT_EQ(value::from_bool(false).to_display(), "false");
    EXPECT_EQ(value::from_string("a\"b\\c\n\x01\xc3\xa9").to_display(), "\"a\\\"b\\\\c\\n\\x01\xc3\xa9\"");
    EXPECT_EQ(array_of<int16_t>(value_type::INT16, {1, -2, 3}).to_display(), "[1, -2, 3]");
    EXPECT_EQ(array_of<uint8_t>(value_type::UINT8, {1, 2, 3, 4, 5}).to_display(2), "[1, 2, ... (5 total)]");
    EXPECT_EQ(array_of<uint8_t>(value_type::BOOL, {1, 0}).to_display(), "[true, false]");
    EXPECT_EQ(value::from_strings({"a", "b", "c"}).to_display(1), "[\"a\", ... (3 total)]");
    EXPECT_EQ(value::from_strings({"a"}).to_display(0), "[... (1 total)]");
    EXPECT_EQ(value::from_strings({}).to_display(), "[]");
}

TEST(GgufValue, FromArrayValidatesItsBytes) {
    EXPECT_THROW(value::from_array(value_type::UINT32, 2, std::vector<uint8_t>(7)), std::invalid_argument);
    EXPECT_THROW(value::from_array(value_type::UINT32, uint64_t(1) << 62, std::vector<uint8_t>(0)),
                 std::invalid_argument);
    EXPECT_THROW(value::from_array(value_type::STRING, 0, {}), std::invalid_argument);
    EXPECT_THROW(value::from_array(value_type::ARRAY, 0, {}), std::invalid_argument);
    EXPECT_THROW(value::from_array(value_type::BOOL, 2, {1, 2}), std::invalid_argument);
    EXPECT_EQ(value::from_array(value_type::UINT16, 2, {1, 0, 2, 0}).array_bytes().size(), 4u);
}

// ---------------------------------------------------------------------------------------------
// Tensors

// Every type with a layout (not retired), with 1 to 4 dimensions and random bytes.
TEST(GgufTensors, EveryTypeAndRankRoundTripsZeroCopy) {
    struct expected_tensor {
        std::string          name;
        ggml_type            type;
        std::vector<int64_t> ne;
        uint64_t             nbytes;
        std::vector<uint8_t> data;
    };
    std::mt19937_64              rng(2);
    std::vector<expected_tensor> expected;
    for (int id = 0; id < GGML_TYPE_COUNT; ++id) {
        if (!ggml_type_is_valid(id)) {
            continue;
        }
        const ggml_type_traits & traits = *ggml_get_type_traits(id);
        for (size_t rank = 1; rank <= 4; ++rank) {
            std::vector<int64_t> ne = {traits.blck_size * 2, 3, 2, 5};
            ne.resize(rank);
            uint64_t nbytes = 2 * traits.type_size;  // two blocks per row, times the other dims
            for (size_t d = 1; d < rank; ++d) {
                nbytes *= uint64_t(ne[d]);
            }
            expected.push_back({std::string(traits.type_name) + "." + std::to_string(rank), ggml_type(id), ne, nbytes,
                                random_bytes(rng, nbytes)});
        }
    }
    writer w;
    for (const expected_tensor & e : expected) {
        w.add_tensor(e.name, e.type, e.ne, e.data.data());
    }
    const std::vector<uint8_t> file = w.write_to_memory();
    const reader               r    = reader::from_memory(file.data(), file.size());
    ASSERT_EQ(r.tensors().size(), expected.size());
    uint64_t running = 0;
    for (size_t i = 0; i < expected.size(); ++i) {
        const expected_tensor &   e = expected[i];
        const gguf::tensor_info & t = r.tensors()[i];
        SCOPED_TRACE(e.name);
        EXPECT_EQ(t.name, e.name);
        EXPECT_EQ(t.type, e.type);
        EXPECT_EQ(t.n_dims, e.ne.size());
        for (size_t d = 0; d < 4; ++d) {
            EXPECT_EQ(t.ne[d], d < e.ne.size() ? e.ne[d] : 1);
        }
        EXPECT_EQ(t.nbytes, e.nbytes);
        EXPECT_EQ(t.offset, running);
        running = (running + e.nbytes + 31) / 32 * 32;
        EXPECT_EQ(t.file_offset, r.data_offset() + t.offset);
        const std::span<const uint8_t> data = r.tensor_data(t);
        EXPECT_EQ(data.data(), file.data() + r.data_offset() + t.offset);  // a view, not a copy
        ASSERT_EQ(data.size(), e.nbytes);
        EXPECT_TRUE(std::equal(data.begin(), data.end(), e.data.begin()));
    }
    EXPECT_EQ(r.data_offset() % 32, 0u);
    EXPECT_EQ(r.file_size(), r.data_offset() + running);
}

TEST(GgufTensors, NonDefaultAlignments) {
    const std::vector<uint8_t> data(36, 0xab);
    const int64_t              ne[] = {9};
    for (const uint32_t alignment : {1u, 8u, 32u, 64u, 4096u}) {
        SCOPED_TRACE(alignment);
        writer w;
        w.set("general.architecture", value::from_string("x"));
        w.set_alignment(alignment);
        w.add_tensor("a", GGML_TYPE_F32, ne, data.data());
        w.add_tensor("b", GGML_TYPE_F32, ne, data.data());
        const std::vector<uint8_t> file = w.write_to_memory();
        const reader               r    = reader::from_memory(file.data(), file.size());
        EXPECT_EQ(r.alignment(), alignment);
        const gguf::value * stored = r.find("general.alignment");
        if (alignment == 32) {
            EXPECT_EQ(stored, nullptr);
        } else {
            ASSERT_NE(stored, nullptr);
            EXPECT_EQ(stored->type(), value_type::UINT32);
            EXPECT_EQ(stored->as_uint(), alignment);
        }
        EXPECT_EQ(r.data_offset() % alignment, 0u);
        EXPECT_EQ(r.tensors()[1].offset, (36 + alignment - 1) / alignment * alignment);
        for (const gguf::tensor_info & t : r.tensors()) {
            const std::span<const uint8_t> got = r.tensor_data(t);
            EXPECT_TRUE(std::equal(got.begin(), got.end(), data.begin(), data.end()));
        }
    }
}

TEST(GgufTensors, AlignmentSetThroughMetadataGovernsTheLayout) {
    const std::vector<uint8_t> data(8);
    const int64_t              ne[] = {2};
    writer                     w;
    w.set("general.alignment", value::from_u32(32));  // explicit, so it is kept even at 32
    w.add_tensor("a", GGML_TYPE_F32, ne, data.data());
    w.add_tensor("b", GGML_TYPE_F32, ne, data.data());
    {
        const std::vector<uint8_t> file = w.write_to_memory();
        const reader               r    = reader::from_memory(file.data(), file.size());
        EXPECT_NE(r.find("general.alignment"), nullptr);
        EXPECT_EQ(r.tensors()[1].offset, 32u);
    }
    w.set("general.alignment", value::from_u32(128));
    {
        const std::vector<uint8_t> file = w.write_to_memory();
        const reader               r    = reader::from_memory(file.data(), file.size());
        EXPECT_EQ(r.alignment(), 128u);
        EXPECT_EQ(r.tensors()[1].offset, 128u);
    }
    w.set_alignment(32);  // back to the default: the key goes away
    {
        const std::vector<uint8_t> file = w.write_to_memory();
        const reader               r    = reader::from_memory(file.data(), file.size());
        EXPECT_EQ(r.find("general.alignment"), nullptr);
        EXPECT_EQ(r.tensors()[1].offset, 32u);
    }
    w.set_alignment(256);
    EXPECT_TRUE(w.remove("general.alignment"));
    const std::vector<uint8_t> file = w.write_to_memory();
    EXPECT_EQ(reader::from_memory(file.data(), file.size()).tensors()[1].offset, 32u);
}

TEST(GgufTensors, WriterRejectsInvalidTensors) {
    const std::vector<uint8_t> data(1024);
    const int64_t              ok[] = {32};
    writer                     w;
    w.add_tensor("t", GGML_TYPE_Q4_0, ok, data.data());
    const auto rejects = [&](const std::string & name, int type, std::vector<int64_t> ne) {
        EXPECT_THROW(w.add_tensor(name, ggml_type(type), ne, data.data()), std::invalid_argument)
            << name << " " << type << " " << ::testing::PrintToString(ne);
    };
    rejects("", GGML_TYPE_F32, {1});
    rejects(std::string(64, 'n'), GGML_TYPE_F32, {1});
    rejects("t", GGML_TYPE_F32, {1});  // duplicate
    rejects("u", GGML_TYPE_Q4_0, {33});
    rejects("u", 31, {32});  // retired
    rejects("u", 4, {32});   // retired
    rejects("u", GGML_TYPE_COUNT, {32});
    rejects("u", -1, {32});
    rejects("u", GGML_TYPE_F32, {});
    rejects("u", GGML_TYPE_F32, {1, 1, 1, 1, 1});
    rejects("u", GGML_TYPE_F32, {4, 0});
    rejects("u", GGML_TYPE_F32, {-4});
    rejects("u", GGML_TYPE_F32, {int64_t(1) << 62, 4});
    EXPECT_THROW(w.add_tensor("u", GGML_TYPE_F32, ok, writer::fill_fn{}), std::invalid_argument);
    EXPECT_THROW(w.add_tensor("u", GGML_TYPE_F32, ok, static_cast<const void *>(nullptr)), std::invalid_argument);
    w.add_tensor(std::string(63, 'n'), GGML_TYPE_F32, ok, data.data());
    const std::vector<uint8_t> file = w.write_to_memory();
    EXPECT_EQ(reader::from_memory(file.data(), file.size()).tensors().size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// Files

TEST(GgufFile, WriteStreamsThroughFillAndOpenMapsTheResult) {
    const fs::path path = temp_path("stream.gguf");
    const int64_t  ne[] = {256, 4};
    writer         w;
    w.set("general.architecture", value::from_string("llama"));
    std::vector<std::string> fill_order;
    for (const char * name : {"a", "b", "c"}) {
        w.add_tensor(name, GGML_TYPE_Q8_0, ne, [&fill_order, name](uint8_t * dst) {
            fill_order.push_back(name);
            std::memset(dst, name[0], 8 * 34 * 4);  // nbytes: 8 blocks of 34 bytes per row, 4 rows
        });
    }
    std::vector<size_t> progress;
    w.write(path.string(), [&](size_t index, size_t count, const gguf::tensor_info & t) {
        EXPECT_EQ(count, 3u);
        EXPECT_EQ(fill_order.size(), index + 1);  // called after each tensor is written
        EXPECT_EQ(t.nbytes, 8u * 34 * 4);
        progress.push_back(index);
    });
    EXPECT_EQ(fill_order, (std::vector<std::string>{"a", "b", "c"}));
    EXPECT_EQ(progress, (std::vector<size_t>{0, 1, 2}));
    EXPECT_FALSE(fs::exists(path.string() + ".tmp"));

    // The file on disk is exactly what write_to_memory produces.
    std::ifstream              in(path, std::ios::binary);
    const std::vector<uint8_t> on_disk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fill_order.clear();
    EXPECT_EQ(on_disk, w.write_to_memory());

    {
        reader r = reader::open(path.string());
        EXPECT_EQ(r.file_size(), fs::file_size(path));
        const long page = sysconf(_SC_PAGESIZE);
        for (const gguf::tensor_info & t : r.tensors()) {
            const std::span<const uint8_t> data = r.tensor_data(t);
            // Zero copy: the view sits in the page-aligned mapping at the tensor's file offset.
            EXPECT_EQ((reinterpret_cast<uintptr_t>(data.data()) - t.file_offset) % uintptr_t(page), 0u);
            EXPECT_TRUE(std::all_of(data.begin(), data.end(), [&](uint8_t b) { return b == uint8_t(t.name[0]); }));
        }
        const reader moved = std::move(r);
        EXPECT_EQ(moved.tensors().size(), 3u);
        walk(moved);
    }
    fs::remove(path);
}

// Files in the temporary directory whose names start with `prefix` (the target and any temporary).
std::vector<std::string> files_starting_with(const std::string & prefix) {
    std::vector<std::string> names;
    for (const fs::directory_entry & e : fs::directory_iterator(fs::temp_directory_path())) {
        if (e.path().filename().string().rfind(prefix, 0) == 0) {
            names.push_back(e.path().filename().string());
        }
    }
    return names;
}

TEST(GgufFile, WriteFailuresLeaveNoFileBehind) {
    const int64_t ne[] = {4};
    {
        writer         w;
        const fs::path missing_dir = temp_path("no-such-dir") / "out.gguf";
        try {
            w.write(missing_dir.string());
            ADD_FAILURE() << "write into a missing directory succeeded";
        } catch (const std::runtime_error & e) {
            EXPECT_NE(std::string(e.what()).find(missing_dir.string()), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(std::strerror(ENOENT)), std::string::npos) << e.what();
        }
    }
    {
        const fs::path path = temp_path("fill-throws.gguf");
        writer         w;
        w.add_tensor("t", GGML_TYPE_F32, ne, [](uint8_t *) { throw std::runtime_error("fill failed"); });
        EXPECT_THROW(w.write(path.string()), std::runtime_error);
        EXPECT_EQ(files_starting_with(path.filename().string()), std::vector<std::string>{}) << "no file, no temporary";
    }
    if (fs::exists("/dev/full")) {
        // A file named like the old fixed temporary is somebody else's: the writer neither writes
        // through it nor removes it. And an output that resolves to a device is refused.
        const fs::path link = temp_path("full.gguf.tmp");
        fs::create_symlink("/dev/full", link);
        const std::vector<float> data(4);
        writer                   w;
        w.add_tensor("t", GGML_TYPE_F32, ne, data.data());
        EXPECT_NO_THROW(w.write(temp_path("full.gguf").string()));
        EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
        EXPECT_EQ(fs::file_size(temp_path("full.gguf")), w.write_to_memory().size());
        try {
            w.write(link.string());
            ADD_FAILURE() << "write through a link to /dev/full succeeded";
        } catch (const std::runtime_error & e) {
            EXPECT_NE(std::string(e.what()).find("character device"), std::string::npos) << e.what();
        }
        EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
        EXPECT_TRUE(fs::is_character_file("/dev/full"));
        fs::remove(link);
        fs::remove(temp_path("full.gguf"));
        EXPECT_EQ(files_starting_with(temp_path("full.gguf").filename().string()), std::vector<std::string>{});
    }
}

TEST(GgufFile, OpenReportsMissingAndEmptyFiles) {
    try {
        reader::open(temp_path("missing.gguf").string());
        ADD_FAILURE();
    } catch (const gguf::error & e) {
        EXPECT_NE(std::string(e.what()).find("cannot open"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(std::strerror(ENOENT)), std::string::npos) << e.what();
    }
    const fs::path empty = temp_path("empty.gguf");
    std::ofstream(empty).close();
    EXPECT_THROW(reader::open(empty.string()), gguf::error);
    fs::remove(empty);
    EXPECT_THROW(reader::open(fs::temp_directory_path().string()), gguf::error);
}

// ---------------------------------------------------------------------------------------------
// Robustness

TEST(GgufRobustness, EveryTruncationIsAnError) {
    const std::vector<uint8_t> file = small_valid_file();
    const reader               full = reader::from_memory(file.data(), file.size());
    const gguf::tensor_info &  last = full.tensors().back();
    ASSERT_EQ(last.file_offset + last.nbytes, file.size()) << "the last tensor must end the file";
    for (size_t n = 0; n < file.size(); ++n) {
        const std::vector<uint8_t> prefix(file.begin(), file.begin() + ptrdiff_t(n));  // exact size: ASan sees overreads
        try {
            reader::from_memory(prefix.data(), prefix.size());
            ADD_FAILURE() << "a file cut to " << n << " bytes was accepted";
        } catch (const gguf::error & e) {
            EXPECT_LE(e.offset(), n) << e.what();
        }
    }
}

TEST(GgufRobustness, RandomByteFlipsNeverCrash) {
    const std::vector<uint8_t> file = small_valid_file();
    std::mt19937_64            rng(3);
    size_t                     accepted = 0;
    for (int iteration = 0; iteration < 20000; ++iteration) {
        std::vector<uint8_t> mutated = file;
        const int            flips   = 1 + int(rng() % 4);
        for (int f = 0; f < flips; ++f) {
            const size_t at = rng() % mutated.size();
            // Mostly single-bit flips; sometimes a byte that makes lengths and counts huge.
            mutated[at] = rng() % 4 == 0 ? uint8_t(0xff) : uint8_t(mutated[at] ^ (1u << (rng() % 8)));
        }
        if (rng() % 8 == 0) {
            mutated.resize(rng() % mutated.size());
        }
        try {
            const reader r = reader::from_memory(mutated.data(), mutated.size());
            walk(r);
            ++accepted;
        } catch (const gguf::error & e) {
            ASSERT_LE(e.offset(), mutated.size()) << e.what();
        }
    }
    // Flips inside tensor data and string contents leave a valid file: both paths ran.
    EXPECT_GT(accepted, 100u);
    EXPECT_LT(accepted, 19900u);
}

} // namespace
