// repack_tensor: validates the shape, then tiles 32-row groups in parallel, each with its type's
// group writer. Every output byte belongs to exactly one group, so the result is the same for any
// thread count.
#include "repack.h"
#include "repack-internal.h"

#include "core/parallel.h"

#include <bit>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace hexnpu::hexagon {

static_assert(std::endian::native == std::endian::little, "tile and block fields are little-endian");

// The proto enum is keyed by GGML type id; keep the two in step.
static_assert(int(proto::tiled_type::q4_0) == GGML_TYPE_Q4_0 && int(proto::tiled_type::q4_1) == GGML_TYPE_Q4_1 &&
              int(proto::tiled_type::q8_0) == GGML_TYPE_Q8_0 && int(proto::tiled_type::q2_K) == GGML_TYPE_Q2_K &&
              int(proto::tiled_type::q3_K) == GGML_TYPE_Q3_K && int(proto::tiled_type::q4_K) == GGML_TYPE_Q4_K &&
              int(proto::tiled_type::q5_K) == GGML_TYPE_Q5_K && int(proto::tiled_type::q6_K) == GGML_TYPE_Q6_K &&
              int(proto::tiled_type::iq4_nl) == GGML_TYPE_IQ4_NL && int(proto::tiled_type::mxfp4) == GGML_TYPE_MXFP4 &&
              int(proto::tiled_type::q1_0) == GGML_TYPE_Q1_0 && int(proto::tiled_type::q2_0) == GGML_TYPE_Q2_0);

namespace detail {

group_writer group_writer_for(proto::tiled_type type) {
    switch (type) {
        case proto::tiled_type::q4_0:
        case proto::tiled_type::iq4_nl: return write_group_q4_0;
        case proto::tiled_type::mxfp4:  return write_group_mxfp4;
        case proto::tiled_type::q4_1:   return write_group_q4_1;
        case proto::tiled_type::q8_0:   return write_group_q8_0;
        case proto::tiled_type::q1_0:   return write_group_q1_0;
        case proto::tiled_type::q2_0:   return write_group_q2_0;
        case proto::tiled_type::q2_K:   return write_group_q2_K;
        case proto::tiled_type::q3_K:   return write_group_q3_K;
        case proto::tiled_type::q4_K:   return write_group_q4_K;
        case proto::tiled_type::q5_K:   return write_group_q5_K;
        case proto::tiled_type::q6_K:   return write_group_q6_K;
    }
    return nullptr;
}

} // namespace detail

namespace {

std::string format(const char * fmt, auto... args) {
    char buf[256];
    std::snprintf(buf, sizeof buf, fmt, args...);
    return buf;
}

// Empty when a [ne0, ne1, ne2, ne3] tensor of this type can be tiled.
std::string shape_error(ggml_type type, const int64_t ne[4]) {
    if (!is_tileable_type(type)) {
        return format("type %s has no tiled format", ggml_type_name(type));
    }
    for (int i = 0; i < 4; ++i) {
        if (ne[i] < 0) {
            return format("ne[%d] = %" PRId64 " is negative", i, ne[i]);
        }
    }
    if (ne[0] % ggml_blck_size(type) != 0) {
        return format("ne0 = %" PRId64 " is not a multiple of the %s block size %" PRId64, ne[0], ggml_type_name(type),
                      ggml_blck_size(type));
    }
    return {};
}

} // namespace

bool is_tileable_type(ggml_type type) { return proto::is_tiled_type_id(type); }

bool is_lossless_tiling(ggml_type type) { return is_tileable_type(type) && proto::is_lossless(proto::tiled_type(type)); }

size_t tiled_nbytes(ggml_type type, const int64_t ne[4]) {
    if (std::string error = shape_error(type, ne); !error.empty()) {
        throw std::invalid_argument("tiled_nbytes: " + error);
    }
    return size_t(proto::tiled_nbytes(proto::tiled_type(type), ne));
}

repack_result repack_tensor(ggml_type type, const int64_t ne[4], const void * flat, void * tiled, int n_threads) {
    if (std::string error = shape_error(type, ne); !error.empty()) {
        return {error};
    }
    const auto                 tt          = proto::tiled_type(type);
    const detail::group_writer write_group = detail::group_writer_for(tt);
    const size_t               row_bytes   = ggml_row_size(type, ne[0]);
    const int64_t              n_k_tiles   = proto::n_k_tiles(tt, ne[0]);
    const int64_t              n_groups_2d = proto::n_col_tiles(ne[1]);
    const size_t               group_bytes = size_t(n_k_tiles) * proto::tile_size(tt);
    const int64_t              n_groups    = n_groups_2d * ne[2] * ne[3];
    if (group_bytes == 0) {
        return {};
    }

    // The first failing group (lowest index) is reported, whatever the thread count.
    std::mutex                            failure_mutex;
    int64_t                               failed_group = n_groups;
    std::optional<detail::scale_overflow> failure;

    // A thread start costs tens of microseconds: give each thread at least 256 KiB of tiles.
    const int64_t min_groups_per_thread = std::max<int64_t>(1, int64_t(256 << 10) / int64_t(group_bytes));
    parallel_for(n_groups, n_threads, min_groups_per_thread, [&](int64_t begin, int64_t end) {
        for (int64_t g = begin; g < end; ++g) {
            const int64_t slice     = g / n_groups_2d;
            const int64_t first_row = (g % n_groups_2d) * proto::TILE_N_ROWS;
            const detail::row_group src{
                static_cast<const uint8_t *>(flat) + size_t(slice * ne[1] + first_row) * row_bytes, row_bytes,
                int(std::min<int64_t>(proto::TILE_N_ROWS, ne[1] - first_row)), n_k_tiles};
            // Groups of a slice are consecutive, so group g starts at g * group_bytes.
            uint8_t * dst = static_cast<uint8_t *>(tiled) + size_t(g) * group_bytes;
            if (src.n_rows < int(proto::TILE_N_ROWS)) {
                std::memset(dst, 0, group_bytes);  // padding rows: zero quants and zero scales
            }
            if (std::optional<detail::scale_overflow> bad = write_group(src, dst)) {
                const std::lock_guard lock(failure_mutex);
                if (g < failed_group) {
                    failed_group = g;
                    failure      = bad;
                }
                return;
            }
        }
    });
    if (!failure) {
        return {};
    }
    const int64_t slice = failed_group / n_groups_2d;
    const int64_t row   = failed_group % n_groups_2d * proto::TILE_N_ROWS + failure->row;
    return {format("%s scale product %s = %g at row %" PRId64 " (slice i2=%" PRId64 ", i3=%" PRId64 "), super-block %" PRId64
                   " does not fit in fp16: tensor stays flat",
                   ggml_type_name(type), failure->product_name, double(failure->product), row, slice % ne[2], slice / ne[2],
                   failure->super_block)};
}

} // namespace hexnpu::hexagon
