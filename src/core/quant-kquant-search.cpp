#include "quant-kquant-search.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace hexnpu::kquant {
namespace {

int clamp_code(int l, int lo, int hi) { return std::max(lo, std::min(hi, l)); }

// The evaluation order of every sum and product below is GGML's: the chosen codes flip on
// single-ulp differences, and the quantized bytes must match.
float weighted_error(int n, const float * x, const float * weights, const uint8_t * L, float scale, float min,
                     bool use_mad) {
    float error = 0;
    for (int i = 0; i < n; ++i) {
        float diff = scale * float(L[i]) + min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        error += weights[i] * diff;
    }
    return error;
}

// One pass of symmetric rounding with weights x²; returns Σw·x·l and Σw·l².
struct SymmetricSums {
    float sumlx;
    float suml2;
};

SymmetricSums symmetric_sums(int n, int nmax, const float * x, float iscale) {
    SymmetricSums s{0, 0};
    for (int i = 0; i < n; ++i) {
        const float l = float(clamp_code(nearest_int(iscale * x[i]), -nmax, nmax - 1));
        const float w = x[i] * x[i];
        s.sumlx += w * x[i] * l;
        s.suml2 += w * l * l;
    }
    return s;
}

// The element with the largest |x| (first one on ties), signed; amax = its magnitude.
struct Extreme {
    float max;
    float amax;
};

Extreme signed_extreme(int n, const float * x) {
    Extreme e{0, 0};
    for (int i = 0; i < n; ++i) {
        const float ax = std::fabs(x[i]);
        if (ax > e.amax) {
            e.amax = ax;
            e.max  = x[i];
        }
    }
    return e;
}

} // namespace

float make_qkx2_quants(int n, int nmax, const float * x, const float * weights, uint8_t * L, float * out_min,
                       const AffineSearch & search) {
    assert(n >= 1 && n <= MAX_GROUP);
    float min   = x[0];
    float max   = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; ++i) {
        if (x[i] < min) {
            min = x[i];
        }
        if (x[i] > max) {
            max = x[i];
        }
        sum_w += weights[i];
        sum_x += weights[i] * x[i];
    }
    // The offset only ever shifts values down: a group of positive values keeps min 0.
    if (min > 0) {
        min = 0;
    }
    if (max == min) {
        std::fill(L, L + n, uint8_t(0));
        *out_min = -min;
        return 0.f;
    }

    float iscale = float(nmax) / (max - min);
    float scale  = 1 / iscale;
    for (int i = 0; i < n; ++i) {
        L[i] = uint8_t(clamp_code(nearest_int(iscale * (x[i] - min)), 0, nmax));
    }
    if (search.nstep < 1) {
        *out_min = -min;
        return scale;
    }
    float best_error = weighted_error(n, x, weights, L, scale, min, search.use_mad);

    uint8_t Laux[MAX_GROUP];
    for (int is = 0; is <= search.nstep; ++is) {
        iscale      = (search.rmin + search.rdelta * float(is) + float(nmax)) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; ++i) {
            const int l = clamp_code(nearest_int(iscale * (x[i] - min)), 0, nmax);
            Laux[i]     = uint8_t(l);
            const float w = weights[i];
            sum_l  += w * float(l);
            sum_l2 += w * float(l) * float(l);
            sum_xl += w * float(l) * x[i];
        }
        // Weighted least squares for (scale, min) given these codes.
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min   = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min   = 0;
                this_scale = sum_xl / sum_l2;
            }
            const float cur_error = weighted_error(n, x, weights, Laux, this_scale, this_min, search.use_mad);
            if (cur_error < best_error) {
                std::copy(Laux, Laux + n, L);
                best_error = cur_error;
                scale      = this_scale;
                min        = this_min;
            }
        }
    }
    *out_min = -min;
    return scale;
}

float make_q3_quants(int n, int nmax, const float * x, int8_t * L) {
    const Extreme extreme = signed_extreme(n, x);
    if (extreme.amax < GROUP_MAX_EPS) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    const float iscale = float(-nmax) / extreme.max;
    float sumlx = 0;
    float suml2 = 0;
    for (int i = 0; i < n; ++i) {
        const int l = clamp_code(nearest_int(iscale * x[i]), -nmax, nmax - 1);
        L[i]        = int8_t(l);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * float(l);
        suml2 += w * float(l) * float(l);
    }
    // Coordinate descent: move one code to its best value given the optimal scale of the
    // others, and keep the move if the whole fit (Σwxl)²/Σwl² improves.
    for (int pass = 0; pass < 5; ++pass) {
        int n_changed = 0;
        for (int i = 0; i < n; ++i) {
            const float w   = x[i] * x[i];
            float       slx = sumlx - w * x[i] * float(L[i]);
            if (slx > 0) {
                float     sl2   = suml2 - w * float(L[i]) * float(L[i]);
                const int new_l = clamp_code(nearest_int(x[i] * sl2 / slx), -nmax, nmax - 1);
                if (new_l != L[i]) {
                    slx += w * x[i] * float(new_l);
                    sl2 += w * float(new_l) * float(new_l);
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i]  = int8_t(new_l);
                        sumlx = slx;
                        suml2 = sl2;
                        ++n_changed;
                    }
                }
            }
        }
        if (n_changed == 0) {
            break;
        }
    }
    for (int i = 0; i < n; ++i) {
        L[i] = int8_t(L[i] + nmax);
    }
    return sumlx / suml2;
}

float make_qx_quants(int n, int nmax, const float * x, int8_t * L) {
    const Extreme extreme = signed_extreme(n, x);
    if (extreme.amax < GROUP_MAX_EPS) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    const auto store_codes = [&](float iscale) {
        for (int i = 0; i < n; ++i) {
            L[i] = int8_t(nmax + clamp_code(nearest_int(iscale * x[i]), -nmax, nmax - 1));
        }
    };
    const float first_iscale = float(-nmax) / extreme.max;
    store_codes(first_iscale);
    const SymmetricSums first = symmetric_sums(n, nmax, x, first_iscale);
    float scale = first.suml2 != 0 ? first.sumlx / first.suml2 : 0.f;
    // For codes l the best scale is Σwxl/Σwl² and the error drop is (Σwxl)²/Σwl²: keep the largest.
    float best = scale * first.sumlx;
    for (int is = -9; is <= 9; ++is) {
        if (is == 0) {
            continue;
        }
        const float         iscale = -(float(nmax) + 0.1f * float(is)) / extreme.max;
        const SymmetricSums s      = symmetric_sums(n, nmax, x, iscale);
        if (s.suml2 > 0 && s.sumlx * s.sumlx > best * s.suml2) {
            store_codes(iscale);
            scale = s.sumlx / s.suml2;
            best  = scale * s.sumlx;
        }
    }
    return scale;
}

} // namespace hexnpu::kquant
