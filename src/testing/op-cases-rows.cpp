// GET_ROWS from every readable type, SET_ROWS into every storable type; I32 and I64 row ids,
// batched and broadcast ids, strided sources.
#include "op-case.h"

namespace hexnpu::optest {
namespace {

// Every type with to_float and from_float: what GET_ROWS reads and SET_ROWS writes.
constexpr ggml_type kRowTypes[] = {
    GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q4_0,   GGML_TYPE_Q4_1,  GGML_TYPE_Q5_0,
    GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,  GGML_TYPE_Q5_K,
    GGML_TYPE_Q6_K, GGML_TYPE_IQ4_NL, GGML_TYPE_MXFP4, GGML_TYPE_Q1_0, GGML_TYPE_Q2_0,
};

// A row length that is a whole number of blocks; 33 for element types (not a multiple of 32).
int64_t row_length(ggml_type type) {
    const int64_t blck = ggml_blck_size(type);
    return blck == 1 ? 33 : blck == 256 ? 256 : 2 * blck;
}

} // namespace

void add_rows_cases(std::vector<op_case> & cases) {
    // GET_ROWS: 5 of 10 rows (repeats allowed), dequantized to F32 (I32 stays I32). A backend with
    // a tiled buffer type reads quantized tables from it too: the Q3_K..Q6_K tile formats store the
    // scale products (d sc, dmin m) rounded to fp16 (the spec's), each within 2^-11 relative, which
    // where d sc q and dmin m nearly cancel costs more than that in the element; 4e-7 is seen,
    // 2e-6 allows it and still rejects a scale off by 2^-8. The lossless formats stay exact.
    auto get_tol = [](ggml_type type) {
        const bool lossy_tiles = type == GGML_TYPE_Q3_K || type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K ||
                                 type == GGML_TYPE_Q6_K;
        return lossy_tiles ? tolerance{kExactTol.vs_f64, kExactTol.vs_cpu, 2e-6} : kExactTol;
    };
    auto add_get = [&](ggml_type type, ggml_type id_type, shape src_ne, int64_t n_ids, int64_t row_pad) {
        const shape ids_ne = {n_ids, src_ne[2], src_ne[3], 1};
        cases.push_back({"type=" + type_str(type) + ",type_ids=" + type_str(id_type) + ",ne=" + shape_str(src_ne) +
                             ",n_ids=" + std::to_string(n_ids) + (row_pad ? ",row_pad=" + std::to_string(row_pad) : ""),
                         get_tol(type), [=](case_graph & g) {
                             const fill_spec fill = type == GGML_TYPE_I32 ? small_integers(-1000, 1000) : uniform(-1.0, 1.0);
                             ggml_tensor * src = row_pad ? g.strided_input(type, src_ne, row_pad, fill) : g.input(type, src_ne, fill);
                             return ggml_get_rows(g.ctx(), src, g.input(id_type, ids_ne, indices(src_ne[1])));
                         }});
    };
    for (const ggml_type type : kRowTypes) {
        add_get(type, GGML_TYPE_I32, {row_length(type), 10, 1, 1}, 5, 0);
    }
    add_get(GGML_TYPE_I32, GGML_TYPE_I32, {33, 10, 1, 1}, 5, 0);
    add_get(GGML_TYPE_F32, GGML_TYPE_I64, {33, 10, 1, 1}, 5, 0);
    add_get(GGML_TYPE_F32, GGML_TYPE_I32, {33, 10, 2, 3}, 4, 0);
    add_get(GGML_TYPE_Q4_0, GGML_TYPE_I32, {64, 10, 2, 3}, 4, 0);
    add_get(GGML_TYPE_F32, GGML_TYPE_I32, {33, 10, 2, 1}, 1, 7);
    add_get(GGML_TYPE_F16, GGML_TYPE_I32, {4096, 3, 1, 1}, 2, 0);

    // SET_ROWS: 4 F32 rows into distinct rows of a 10-row destination whose other rows keep their
    // contents; ids [4, r2, r3] broadcast over the source's dims 2 and 3.
    auto add_set = [&](ggml_type type, ggml_type id_type, shape dst_ne, shape ids_ne, double range = 1.0) {
        const shape src_ne = {dst_ne[0], ids_ne[0], dst_ne[2], dst_ne[3]};
        cases.push_back({"type=" + type_str(type) + ",type_ids=" + type_str(id_type) + ",ne=" + shape_str(dst_ne) +
                             ",ne_ids=" + shape_str(ids_ne) + (range != 1.0 ? ",range=" + std::to_string(int(range)) : ""),
                         kExactTol, [=](case_graph & g) {
                             ggml_tensor * dst = g.input(type, dst_ne);
                             ggml_tensor * src = g.input(GGML_TYPE_F32, src_ne, uniform(-range, range));
                             ggml_tensor * ids = g.input(id_type, ids_ne, distinct_indices(dst_ne[1]));
                             return ggml_set_rows(g.ctx(), dst, src, ids);
                         }});
    };
    for (const ggml_type type : kRowTypes) {
        add_set(type, GGML_TYPE_I64, {row_length(type), 10, 1, 1}, {4, 1, 1, 1});
    }
    add_set(GGML_TYPE_F32, GGML_TYPE_I32, {33, 10, 1, 1}, {4, 1, 1, 1});
    add_set(GGML_TYPE_F16, GGML_TYPE_I32, {33, 10, 2, 3}, {4, 2, 3, 1});
    add_set(GGML_TYPE_F16, GGML_TYPE_I64, {33, 10, 2, 3}, {4, 1, 1, 1});
    add_set(GGML_TYPE_Q8_0, GGML_TYPE_I64, {64, 10, 4, 1}, {4, 2, 1, 1});
    // KV-cache writes: one token (decode) and a 40-token micro-batch (more rows than one DMA block
    // takes) into a 64-row cache with Gemma 3's 256-wide rows; 80-wide rows (an odd number of
    // vectors); values past the F16 range (65504), which must become infinities as in GGML.
    add_set(GGML_TYPE_F16, GGML_TYPE_I64, {256, 64, 1, 1}, {1, 1, 1, 1});
    add_set(GGML_TYPE_F16, GGML_TYPE_I64, {256, 64, 1, 1}, {40, 1, 1, 1});
    add_set(GGML_TYPE_F16, GGML_TYPE_I32, {80, 10, 1, 1}, {4, 1, 1, 1});
    add_set(GGML_TYPE_F16, GGML_TYPE_I64, {128, 10, 2, 1}, {4, 1, 1, 1}, 100000.0);
    // A quantized (Q8_0) KV cache: a micro-batch into Gemma-wide rows, one-block rows of wide range, long rows.
    add_set(GGML_TYPE_Q8_0, GGML_TYPE_I64, {256, 64, 1, 1}, {40, 1, 1, 1});
    add_set(GGML_TYPE_Q8_0, GGML_TYPE_I32, {32, 10, 1, 1}, {4, 1, 1, 1}, 100000.0);
    add_set(GGML_TYPE_Q8_0, GGML_TYPE_I64, {2080, 8, 1, 1}, {3, 1, 1, 1});  // 65 blocks: three vectors of scales
    add_set(GGML_TYPE_Q4_0, GGML_TYPE_I64, {256, 64, 1, 1}, {40, 1, 1, 1});  // a Q4_0 cache
    add_set(GGML_TYPE_Q4_0, GGML_TYPE_I32, {2080, 8, 1, 1}, {3, 1, 1, 1}, 1000.0);
    add_set(GGML_TYPE_F32, GGML_TYPE_I64, {4096, 8, 1, 1}, {3, 1, 1, 1});
}

} // namespace hexnpu::optest
