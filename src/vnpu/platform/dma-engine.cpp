#include "dma-engine.h"

#include "proto/htp-status.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <type_traits>

namespace hexnpu::vnpu {

namespace {

constexpr uint32_t DMA_1D_SIZE_BITS = 24;

bool fits_bits(uint64_t v, uint32_t bits) { return bits >= 64 || (v >> bits) == 0; }

// Bytes from the first byte of the first row to one past the last row.
uint64_t span_of(uint32_t row_size, uint32_t nrows, uint32_t stride) {
    return uint64_t(nrows - 1) * stride + row_size;
}

// row(r, width) for each of nrows rows, width a compile-time constant for the 1-, 2- and 4-byte rows
// the matmul gathers (so that their copies and fills compile to plain stores, no calls).
template <class Row> void for_each_row(uint32_t row_size, uint32_t nrows, Row row) {
    auto rows_of = [&](auto width) {
        for (uint32_t r = 0; r < nrows; ++r) {
            row(r, width);
        }
    };
    switch (row_size) {
        case 1: return rows_of(std::integral_constant<size_t, 1>{});
        case 2: return rows_of(std::integral_constant<size_t, 2>{});
        case 4: return rows_of(std::integral_constant<size_t, 4>{});
        default: return rows_of(size_t(row_size));
    }
}

void copy_rows(uint8_t * dst, uint64_t dst_stride, const uint8_t * src, uint64_t src_stride, uint32_t row_size,
               uint32_t nrows) {
    if (dst_stride == row_size && src_stride == row_size) {
        std::memcpy(dst, src, uint64_t(row_size) * nrows);
        return;
    }
    for_each_row(row_size, nrows, [&](uint32_t r, size_t width) { std::memcpy(dst + r * dst_stride, src + r * src_stride, width); });
}

// Every byte of the rows set to `value` (the poison).
void fill_rows(uint8_t * dst, uint64_t dst_stride, uint32_t row_size, uint32_t nrows, uint8_t value) {
    if (dst_stride == row_size) {
        std::memset(dst, value, uint64_t(row_size) * nrows);
        return;
    }
    for_each_row(row_size, nrows, [&](uint32_t r, size_t width) { std::memset(dst + r * dst_stride, value, width); });
}

std::string hex(uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%" PRIx64, v);
    return buf;
}

} // namespace

dma_engine::dma_engine(const proto::hw_model & hw, uint8_t * vtcm, uint32_t vtcm_size, const session_window & window,
                       bool strict)
    : hw_(hw), vtcm_(vtcm), vtcm_size_(vtcm_size), window_(window), strict_(strict) {}

bool dma_engine::overlaps_vtcm(const uint8_t * p, uint64_t len) const {
    return p < vtcm_ + vtcm_size_ && vtcm_ < p + len;
}

bool dma_engine::in_vtcm(const uint8_t * p, uint64_t len) const {
    return p >= vtcm_ && uint64_t(p - vtcm_) <= vtcm_size_ && len <= vtcm_size_ - uint64_t(p - vtcm_);
}

std::string dma_engine::describe(const void * p) const {
    const uint8_t * b = static_cast<const uint8_t *>(p);
    uint64_t        npu_addr;
    if (b >= vtcm_ && b < vtcm_ + vtcm_size_) {
        return "vtcm+" + hex(uint64_t(b - vtcm_));
    }
    if (window_.npu_address_of(b, &npu_addr)) {
        return "npu " + hex(npu_addr);
    }
    return "host " + hex(uint64_t(uintptr_t(b)));
}

std::string dma_engine::describe_desc(uint32_t queue, const htp::dma_desc & d) const {
    return "queue " + std::to_string(queue) + ", dst " + describe(d.dst) + ", src " + describe(d.src) + ", row_size " +
           std::to_string(d.row_size) + ", nrows " + std::to_string(d.nrows) + ", dst_stride " +
           std::to_string(d.dst_stride) + ", src_stride " + std::to_string(d.src_stride);
}

dma_engine::fault dma_engine::check(hw_queue & q, const htp::dma_desc & d, ptrdiff_t * to_view) const {
    *to_view = 0;
    if (d.nrows == 1 && !fits_bits(d.row_size, DMA_1D_SIZE_BITS)) {
        return fault::size_1d;
    }
    const uint32_t bits = hw_.dma_2d_field_bits;
    if (d.nrows > 1 && !(fits_bits(d.row_size, bits) && fits_bits(d.nrows, bits) && fits_bits(d.dst_stride, bits) &&
                         fits_bits(d.src_stride, bits))) {
        return fault::fields_2d;
    }
    const uint64_t dst_span = span_of(d.row_size, d.nrows, d.dst_stride);
    const uint64_t src_span = span_of(d.row_size, d.nrows, d.src_stride);
    const bool     dst_v    = overlaps_vtcm(d.dst, dst_span);
    const bool     src_v    = overlaps_vtcm(d.src, src_span);
    if ((dst_v && !in_vtcm(d.dst, dst_span)) || (src_v && !in_vtcm(d.src, src_span))) {
        return fault::vtcm_bounds;
    }
    if (dst_v && src_v) {
        return fault::both_vtcm;
    }
    if (!dst_v && !src_v) {
        return fault::neither_vtcm;
    }
    const uint8_t * ddr      = dst_v ? d.src : d.dst;
    const uint64_t  ddr_span = dst_v ? src_span : dst_span;
    // The queue's last buffer, while nothing was unmapped since: most transfers of an op hit it.
    const uint64_t unmaps = window_.unmap_count();
    if (q.buffer_unmaps == unmaps && ddr >= q.buffer_lo && ddr <= q.buffer_hi && ddr_span <= uint64_t(q.buffer_hi - ddr)) {
        *to_view = q.buffer_to_view;
        return fault::none;
    }
    q.buffer_to_view = 0;
    if (!window_.mapped_buffer_of(ddr, ddr_span, &q.buffer_lo, &q.buffer_hi) &&
        !window_.extended_buffer_of(ddr, ddr_span, &q.buffer_lo, &q.buffer_hi, &q.buffer_to_view)) {
        q.buffer_unmaps = ~uint64_t(0);
        return fault::unmapped;
    }
    q.buffer_unmaps = unmaps;
    *to_view        = q.buffer_to_view;
    return fault::none;
}

std::string dma_engine::fault_text(fault f) const {
    switch (f) {
        case fault::none: return "";
        case fault::size_1d: return "1-D descriptor size exceeds " + std::to_string(DMA_1D_SIZE_BITS) + " bits";
        case fault::fields_2d:
            return "2-D descriptor field exceeds the " + std::to_string(hw_.dma_2d_field_bits) + "-bit fields of v" +
                   std::to_string(hw_.arch);
        case fault::vtcm_bounds: return "VTCM side out of VTCM bounds (" + std::to_string(vtcm_size_) + " bytes)";
        case fault::both_vtcm: return "both sides in VTCM (one side must be DDR)";
        case fault::neither_vtcm: return "neither side in VTCM (DDR to DDR)";
        case fault::unmapped: return "DDR side not inside a mapped window buffer (nor an extended one)";
    }
    return "unknown DMA fault";
}

void dma_engine::record(std::string message) {
    std::lock_guard lock(violations_mutex_);
    if (!violations_.empty()) {
        violations_ += "; ";
    }
    violations_ += "strict: " + message;
}

int dma_engine::submit(uint32_t queue, const htp::dma_desc & desc, uint64_t * ticket) {
    if (queue >= queues_.size()) {
        record("DMA queue " + std::to_string(queue) + " does not exist");
        return proto::HTP_STATUS_STRICT;
    }
    hw_queue & q = queues_[queue];
    *ticket      = q.next_ticket++;
    if (desc.nrows == 0 || desc.row_size == 0) {
        return 0;
    }
    ptrdiff_t to_view = 0;
    if (const fault f = check(q, desc, &to_view); f != fault::none) {
        record("DMA rejected: " + fault_text(f) + ": " + describe_desc(queue, desc));
        return proto::HTP_STATUS_STRICT;
    }
    // An extended buffer's bytes are moved through its view; the descriptor kept its address.
    htp::dma_desc d = desc;
    if (to_view != 0) {
        if (in_vtcm(d.dst, span_of(d.row_size, d.nrows, d.dst_stride))) {
            d.src += to_view;
        } else {
            d.dst += to_view;
        }
    }
    if (track_ddr_ && !in_vtcm(d.dst, span_of(d.row_size, d.nrows, d.dst_stride))) {
        q.ddr_writes.push_back({d.dst, d.row_size, d.nrows, d.dst_stride});
    }
    if (!strict_) {
        copy_rows(d.dst, d.dst_stride, d.src, d.src_stride, d.row_size, d.nrows);
        return 0;
    }
    transfer t{*ticket, d, overlaps_vtcm(d.src, span_of(d.row_size, d.nrows, d.src_stride)), {}};
    if (!q.spare.empty()) {
        t.snapshot = std::move(q.spare.back());
        q.spare.pop_back();
    }
    t.snapshot.resize(uint64_t(d.row_size) * d.nrows);
    copy_rows(t.snapshot.data(), d.row_size, d.src, d.src_stride, d.row_size, d.nrows);
    fill_rows(d.dst, d.dst_stride, d.row_size, d.nrows, DMA_POISON);
    q.in_flight.push_back(std::move(t));
    return 0;
}

bool dma_engine::complete(uint32_t queue, transfer & t) {
    const htp::dma_desc & d      = t.d;
    bool                  intact = true;
    for (uint32_t r = 0; r < d.nrows && t.src_in_vtcm && intact; ++r) {
        if (std::memcmp(d.src + uint64_t(r) * d.src_stride, t.snapshot.data() + uint64_t(r) * d.row_size,
                        d.row_size) != 0) {
            record("VTCM source changed between push and pop (row " + std::to_string(r) +
                   "): " + describe_desc(queue, d));
            intact = false;
        }
    }
    copy_rows(d.dst, d.dst_stride, t.snapshot.data(), d.row_size, d.row_size, d.nrows);
    return intact;
}

int dma_engine::wait(uint32_t queue, uint64_t ticket) {
    if (queue >= queues_.size()) {
        record("DMA queue " + std::to_string(queue) + " does not exist");
        return proto::HTP_STATUS_STRICT;
    }
    hw_queue & q  = queues_[queue];
    bool       ok = true;
    while (!q.in_flight.empty() && q.in_flight.front().ticket <= ticket) {
        transfer & t = q.in_flight.front();
        ok           = complete(queue, t) && ok;
        q.spare.push_back(std::move(t.snapshot));
        q.in_flight.pop_front();
    }
    return ok ? 0 : int(proto::HTP_STATUS_STRICT);
}

void dma_engine::take_ddr_writes(std::vector<ddr_rows> * out) {
    for (hw_queue & q : queues_) {
        out->insert(out->end(), q.ddr_writes.begin(), q.ddr_writes.end());
        q.ddr_writes.clear();
    }
}

uint32_t dma_engine::op_done(std::string * message) {
    for (uint32_t i = 0; i < queues_.size(); ++i) {
        hw_queue & q = queues_[i];
        if (!q.in_flight.empty()) {
            record("DMA queue not drained when the op returned: " + std::to_string(q.in_flight.size()) +
                   " transfer(s) in flight, oldest: " + describe_desc(i, q.in_flight.front().d));
            q.in_flight.clear();
        }
    }
    std::lock_guard lock(violations_mutex_);
    if (violations_.empty()) {
        return proto::HTP_STATUS_OK;
    }
    *message = std::move(violations_);
    violations_.clear();
    return proto::HTP_STATUS_STRICT;
}

} // namespace hexnpu::vnpu
