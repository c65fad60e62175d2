#include "convert.h"

#include "parallel.h"
#include "quants.h"

#include <cstring>
#include <vector>

namespace hexnpu {

bool can_convert(ggml_type from, ggml_type to) {
    const ggml_type_traits * a = ggml_get_type_traits(from);
    const ggml_type_traits * b = ggml_get_type_traits(to);
    return a && b && (from == to || (a->to_float && b->from_float));
}

void convert_rows(ggml_type from, const void * src, ggml_type to, void * dst, int64_t nrows, int64_t ne0,
                  int n_threads) {
    const size_t in_row  = ggml_row_size(from, ne0);
    const size_t out_row = ggml_row_size(to, ne0);
    if (from == to) {
        std::memcpy(dst, src, in_row * size_t(nrows));
        return;
    }
    const ggml_type_traits * a = ggml_get_type_traits(from);
    const ggml_type_traits * b = ggml_get_type_traits(to);
    // Model files quantize as GGML's ggml_quantize_chunk does: from_float, but for IQ4_NL's search.
    const ggml_from_float_fn quantize = to == GGML_TYPE_IQ4_NL ? quantize_row_iq4_nl_search : b->from_float;
    // Chunks of >= 64K elements keep thread start-up cost negligible.
    const int64_t min_rows = std::max<int64_t>(1, 65536 / std::max<int64_t>(ne0, 1));
    parallel_for(nrows, n_threads, min_rows, [&](int64_t r0, int64_t r1) {
        std::vector<float> row(static_cast<size_t>(ne0));
        for (int64_t r = r0; r < r1; ++r) {
            a->to_float(static_cast<const uint8_t *>(src) + size_t(r) * in_row, row.data(), ne0);
            quantize(row.data(), static_cast<uint8_t *>(dst) + size_t(r) * out_row, ne0);
        }
    });
}

} // namespace hexnpu
