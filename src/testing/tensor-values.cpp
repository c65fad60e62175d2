#include "tensor-values.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace hexnpu::optest {
namespace {

bool is_float_storage(ggml_type type) {
    const ggml_type_traits * tr = ggml_get_type_traits(type);
    return tr && tr->to_float_ref && tr->from_float;
}

// splitmix64: a tiny generator whose sequence is the same on every platform and standard library
// (std:: distributions are not).
class rng {
  public:
    explicit rng(uint64_t seed) : state_(seed) {}
    uint64_t next() {
        uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
        z          = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z          = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    double  unit() { return double(next() >> 11) * 0x1p-53; }  // [0, 1)
    double  in(double lo, double hi) { return lo + (hi - lo) * unit(); }
    int64_t below(int64_t n) { return int64_t(next() % uint64_t(n)); }

  private:
    uint64_t state_;
};

// Row number `index` (ne0 values) drawn as `fill` says.
void draw_row(const fill_spec & fill, int64_t index, rng & r, std::span<double> row) {
    const int64_t n = int64_t(row.size());
    switch (fill.k) {
    case fill_spec::kind::uniform:
        for (double & v : row) {
            v = r.in(fill.lo, fill.hi);
        }
        return;
    case fill_spec::kind::away_from_zero:
        for (double & v : row) {
            v = (r.next() & 1 ? 1.0 : -1.0) * r.in(fill.lo, fill.hi);
        }
        return;
    case fill_spec::kind::mask: {
        const bool whole_row = fill.n > 0 && index % fill.n == fill.n - 1;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t pick = r.below(8);
            if (whole_row || (i > 0 && pick < 2)) {
                row[size_t(i)] = -std::numeric_limits<double>::infinity();
            } else {
                // Zeros as in causal masks, other values so that a backend must really add the mask.
                row[size_t(i)] = pick < 5 ? 0.0 : r.in(fill.lo, fill.hi);
            }
        }
        return;
    }
    case fill_spec::kind::causal_mask:
        for (int64_t i = 0; i < n; ++i) {
            row[size_t(i)] = i > fill.n + index ? -std::numeric_limits<double>::infinity()
                             : r.below(2) == 0  ? 0.0
                                                : r.in(fill.lo, fill.hi);
        }
        return;
    case fill_spec::kind::indices:
        for (double & v : row) {
            v = double(r.below(fill.n));
        }
        return;
    case fill_spec::kind::distinct_indices: {
        if (n > fill.n) {
            throw std::invalid_argument("distinct indices: row longer than the index range");
        }
        std::vector<int64_t> pool(size_t(fill.n));
        std::iota(pool.begin(), pool.end(), int64_t(0));
        const int64_t first = fill.lo != 0.0 ? 1 : 0;  // a hot index: 0 first in every row
        for (int64_t i = 0; i < n; ++i) {  // partial Fisher-Yates shuffle (of the rest)
            if (i >= first) {
                std::swap(pool[size_t(i)], pool[size_t(i + r.below(fill.n - i))]);
            }
            row[size_t(i)] = double(pool[size_t(i)]);
        }
        return;
    }
    case fill_spec::kind::distinct_values: {
        std::vector<int64_t> order(static_cast<size_t>(n));
        std::iota(order.begin(), order.end(), int64_t(0));
        for (int64_t i = n - 1; i > 0; --i) {
            std::swap(order[size_t(i)], order[size_t(r.below(i + 1))]);
        }
        // Multiples of 1/4 around zero: exact in fp16 for rows up to 4096 long.
        for (int64_t i = 0; i < n; ++i) {
            row[size_t(i)] = double(order[size_t(i)] - n / 2) * 0.25;
        }
        return;
    }
    case fill_spec::kind::small_integers:
        for (double & v : row) {
            v = fill.lo + double(r.below(int64_t(fill.hi - fill.lo) + 1));
        }
        return;
    case fill_spec::kind::lower_triangular: {
        const int64_t diag = index % n;  // the row within its (n x n) matrix
        for (int64_t i = 0; i < n; ++i) {
            row[size_t(i)] = i > diag ? 0.0 : i == diag && fill.n == 1 ? 1.0 : r.in(fill.lo, fill.hi);
        }
        return;
    }
    }
}

} // namespace

bool has_values(ggml_type type) {
    return is_float_storage(type) || type == GGML_TYPE_I32 || type == GGML_TYPE_I64;
}

std::vector<double> decode_slots(ggml_type type, const void * data, size_t nbytes) {
    const ggml_type_traits * tr = ggml_get_type_traits(type);
    if (is_float_storage(type)) {
        const int64_t      n = int64_t(nbytes / tr->type_size) * tr->blck_size;
        std::vector<float> f(static_cast<size_t>(n));
        tr->to_float_ref(data, f.data(), n);
        return {f.begin(), f.end()};
    }
    std::vector<double> slots(nbytes / ggml_type_size(type));
    for (size_t i = 0; i < slots.size(); ++i) {
        if (type == GGML_TYPE_I32) {
            int32_t v;
            std::memcpy(&v, static_cast<const uint8_t *>(data) + 4 * i, 4);
            slots[i] = double(v);
        } else if (type == GGML_TYPE_I64) {
            int64_t v;
            std::memcpy(&v, static_cast<const uint8_t *>(data) + 8 * i, 8);
            slots[i] = double(v);
        } else {
            throw std::invalid_argument(std::string("no values for type ") + ggml_type_name(type));
        }
    }
    return slots;
}

size_t slot_count(const ggml_tensor * base) {
    return ggml_nbytes(base) / ggml_type_size(base->type) * size_t(ggml_blck_size(base->type));
}

size_t element_slot(const ggml_tensor * t, int64_t i0, int64_t i1, int64_t i2, int64_t i3) {
    const size_t row = t->view_offs + size_t(i1) * t->nb[1] + size_t(i2) * t->nb[2] + size_t(i3) * t->nb[3];
    const size_t type_size = ggml_type_size(t->type);
    const int64_t blck     = ggml_blck_size(t->type);
    if (blck > 1) {  // rows of block types are dense runs of whole blocks
        return row / type_size * size_t(blck) + size_t(i0);
    }
    return (row + size_t(i0) * t->nb[0]) / type_size;
}

std::vector<double> gather_values(const ggml_tensor * t, std::span<const double> base_slots) {
    std::vector<double> values;
    values.reserve(size_t(ggml_nelements(t)));
    for (int64_t i3 = 0; i3 < t->ne[3]; ++i3) {
        for (int64_t i2 = 0; i2 < t->ne[2]; ++i2) {
            for (int64_t i1 = 0; i1 < t->ne[1]; ++i1) {
                for (int64_t i0 = 0; i0 < t->ne[0]; ++i0) {
                    values.push_back(base_slots[element_slot(t, i0, i1, i2, i3)]);
                }
            }
        }
    }
    return values;
}

std::vector<uint8_t> make_input_bytes(const ggml_tensor * t, const fill_spec & fill, uint64_t seed) {
    if (!ggml_is_contiguous(t) || t->view_src) {
        throw std::invalid_argument("inputs must be new contiguous tensors");
    }
    const bool integral = fill.k == fill_spec::kind::indices || fill.k == fill_spec::kind::distinct_indices ||
                          fill.k == fill_spec::kind::small_integers;
    const bool int_type = t->type == GGML_TYPE_I32 || t->type == GGML_TYPE_I64;
    if ((int_type && !integral) || (!int_type && !is_float_storage(t->type)) ||
        ((fill.k == fill_spec::kind::mask || fill.k == fill_spec::kind::causal_mask) && t->type != GGML_TYPE_F32 &&
         t->type != GGML_TYPE_F16) ||
        (fill.k == fill_spec::kind::lower_triangular && t->ne[0] != t->ne[1])) {
        throw std::invalid_argument(std::string("cannot fill a ") + ggml_type_name(t->type) + " input this way");
    }
    rng                  r(seed);
    const int64_t        ne0 = t->ne[0];
    const int64_t        n   = ggml_nelements(t);
    std::vector<double>  values(static_cast<size_t>(n));
    for (int64_t row = 0; row < n / std::max<int64_t>(ne0, 1); ++row) {
        draw_row(fill, row, r, std::span<double>(values).subspan(size_t(row * ne0), size_t(ne0)));
    }
    std::vector<uint8_t> bytes(ggml_nbytes(t));
    if (t->type == GGML_TYPE_I32 || t->type == GGML_TYPE_I64) {
        const size_t size = ggml_type_size(t->type);
        for (int64_t i = 0; i < n; ++i) {
            const int64_t v64 = int64_t(values[size_t(i)]);
            const int32_t v32 = int32_t(v64);
            std::memcpy(bytes.data() + size_t(i) * size, size == 4 ? static_cast<const void *>(&v32) : &v64, size);
        }
        return bytes;
    }
    const std::vector<float> f(values.begin(), values.end());
    ggml_get_type_traits(t->type)->from_float(f.data(), bytes.data(), n);
    return bytes;
}

uint64_t input_seed(const std::string & case_name, size_t input_index) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char c : case_name) {
        h = (h ^ uint8_t(c)) * 0x100000001b3ull;
    }
    return (h ^ input_index) * 0x100000001b3ull;
}

} // namespace hexnpu::optest
