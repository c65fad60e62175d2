#include "quant-kquant-search.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <iterator>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace hexnpu::kquant {
namespace {

// The evaluation order of every sum and product below is GGML's: the chosen codes flip on
// single-ulp differences, and the quantized bytes must match. The vector code evaluates several
// candidate scales at once, one per lane, each lane repeating the scalar order exactly.

int clamp_code(int l, int lo, int hi) { return std::max(lo, std::min(hi, l)); }

// ---- make_qkx2_quants: shared start -------------------------------------------------------------

// One group being fitted: its values and weights, their statistics, and the search to run.
struct AffineGroup {
    int                  n;
    int                  nmax;
    const float *        x;
    const float *        weights;
    const AffineSearch * search;
    float                min;  // min(x), or 0 if that is positive; then the min of the best fit so far
    float                max;
    float                sum_w;
    float                sum_x;
};

float weighted_error(const AffineGroup & g, const uint8_t * L, float scale, float min) {
    float error = 0;
    for (int i = 0; i < g.n; ++i) {
        float diff = scale * float(L[i]) + min - g.x[i];
        diff = g.search->use_mad ? std::fabs(diff) : diff * diff;
        error += g.weights[i] * diff;
    }
    return error;
}

// Statistics and the first guess (the range [min, max] spread over nmax steps). Returns false
// when that is already the answer: a constant group, or a search without steps.
bool start_affine_search(AffineGroup & g, uint8_t * L, float & scale, float & best_error) {
    assert(g.n >= 1 && g.n <= MAX_GROUP);
    g.min   = g.x[0];
    g.max   = g.x[0];
    g.sum_w = g.weights[0];
    g.sum_x = g.sum_w * g.x[0];
    for (int i = 1; i < g.n; ++i) {
        if (g.x[i] < g.min) {
            g.min = g.x[i];
        }
        if (g.x[i] > g.max) {
            g.max = g.x[i];
        }
        g.sum_w += g.weights[i];
        g.sum_x += g.weights[i] * g.x[i];
    }
    // The offset only ever shifts values down: a group of positive values keeps min 0.
    if (g.min > 0) {
        g.min = 0;
    }
    if (g.max == g.min) {
        std::fill(L, L + g.n, uint8_t(0));
        scale = 0;
        return false;
    }
    const float iscale = float(g.nmax) / (g.max - g.min);
    scale = 1 / iscale;
    for (int i = 0; i < g.n; ++i) {
        L[i] = uint8_t(clamp_code(nearest_int(iscale * (g.x[i] - g.min)), 0, g.nmax));
    }
    if (g.search->nstep < 1) {
        return false;
    }
    best_error = weighted_error(g, L, scale, g.min);
    return true;
}

// Inverse scale of search step `is`. It is relative to the current best min, not to min(x).
float step_iscale(const AffineGroup & g, int is) {
    return (g.search->rmin + g.search->rdelta * float(is) + float(g.nmax)) / (g.max - g.min);
}

// ---- make_q3_quants / make_qx_quants: shared parts -----------------------------------------------

// Symmetric rounding with weights x² at one inverse scale: Σw·x·l and Σw·l².
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

void store_symmetric_codes(int n, int nmax, const float * x, float iscale, int8_t * L) {
    for (int i = 0; i < n; ++i) {
        L[i] = int8_t(nmax + clamp_code(nearest_int(iscale * x[i]), -nmax, nmax - 1));
    }
}

// make_qx_quants' state after its first guess at iscale −nmax/max.
struct QxState {
    float max;    // signed extreme of the group
    float scale;  // best scale so far
    float best;   // its error drop (Σwxl)²/Σwl², the quantity compared between candidates
};

// Returns false for an all-zero group (L = 0, scale 0).
bool start_qx_search(int n, int nmax, const float * x, int8_t * L, QxState & state) {
    const float max = first_max_abs(x, n);
    if (std::fabs(max) < GROUP_MAX_EPS) {
        std::fill(L, L + n, int8_t(0));
        state.scale = 0;
        return false;
    }
    const float iscale = float(-nmax) / max;
    store_symmetric_codes(n, nmax, x, iscale, L);
    const SymmetricSums first = symmetric_sums(n, nmax, x, iscale);
    state.max   = max;
    state.scale = first.suml2 != 0 ? first.sumlx / first.suml2 : 0.f;
    state.best  = state.scale * first.sumlx;
    return true;
}

float qx_candidate_iscale(int nmax, float max, int is) { return -(float(nmax) + 0.1f * float(is)) / max; }

void consider_qx_candidate(int n, int nmax, const float * x, float iscale, SymmetricSums sums, int8_t * L,
                           QxState & state) {
    if (sums.suml2 > 0 && sums.sumlx * sums.sumlx > state.best * sums.suml2) {
        store_symmetric_codes(n, nmax, x, iscale, L);
        state.scale = sums.sumlx / sums.suml2;
        state.best  = state.scale * sums.sumlx;
    }
}

// ---- AVX2: eight candidate scales at a time ------------------------------------------------------

#if defined(__AVX2__)
constexpr int kLanes = 8;

__m256i nearest_int_avx2(__m256 x) {
    const __m256i biased = _mm256_castps_si256(_mm256_add_ps(x, _mm256_set1_ps(12582912.f)));
    return _mm256_sub_epi32(_mm256_and_si256(biased, _mm256_set1_epi32(0x007fffff)), _mm256_set1_epi32(0x00400000));
}

// Search steps first .. first + 7, one per lane, all relative to the current g.min: their codes
// (codes[i][k] for step k), least-squares fits, and errors. A fit counts only where D > 0.
struct StepBatch {
    alignas(32) int32_t codes[MAX_GROUP][kLanes];
    alignas(32) float D[kLanes];
    alignas(32) float scale[kLanes];
    alignas(32) float min[kLanes];
    alignas(32) float error[kLanes];
};

void evaluate_steps_avx2(const AffineGroup & g, int first, StepBatch & out) {
    const __m256 is = _mm256_cvtepi32_ps(
        _mm256_add_epi32(_mm256_set1_epi32(first), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
    const __m256 iscale = _mm256_div_ps(
        _mm256_add_ps(_mm256_add_ps(_mm256_set1_ps(g.search->rmin), _mm256_mul_ps(_mm256_set1_ps(g.search->rdelta), is)),
                      _mm256_set1_ps(float(g.nmax))),
        _mm256_set1_ps(g.max - g.min));
    const __m256i nmax = _mm256_set1_epi32(g.nmax);
    __m256        codes[MAX_GROUP];
    __m256        sum_l = _mm256_setzero_ps(), sum_l2 = _mm256_setzero_ps(), sum_xl = _mm256_setzero_ps();
    for (int i = 0; i < g.n; ++i) {
        const __m256  shifted = _mm256_set1_ps(g.x[i] - g.min);
        const __m256i l = _mm256_max_epi32(_mm256_setzero_si256(),
                                           _mm256_min_epi32(nmax, nearest_int_avx2(_mm256_mul_ps(iscale, shifted))));
        _mm256_store_si256(reinterpret_cast<__m256i *>(out.codes[i]), l);
        codes[i]        = _mm256_cvtepi32_ps(l);
        const __m256 wl = _mm256_mul_ps(_mm256_set1_ps(g.weights[i]), codes[i]);
        sum_l  = _mm256_add_ps(sum_l, wl);
        sum_l2 = _mm256_add_ps(sum_l2, _mm256_mul_ps(wl, codes[i]));
        sum_xl = _mm256_add_ps(sum_xl, _mm256_mul_ps(wl, _mm256_set1_ps(g.x[i])));
    }
    const __m256 sum_w = _mm256_set1_ps(g.sum_w);
    const __m256 sum_x = _mm256_set1_ps(g.sum_x);
    const __m256 D     = _mm256_sub_ps(_mm256_mul_ps(sum_w, sum_l2), _mm256_mul_ps(sum_l, sum_l));
    __m256 scale = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(sum_w, sum_xl), _mm256_mul_ps(sum_x, sum_l)), D);
    __m256 min   = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(sum_l2, sum_x), _mm256_mul_ps(sum_l, sum_xl)), D);
    const __m256 shifts_up = _mm256_cmp_ps(min, _mm256_setzero_ps(), _CMP_GT_OQ);
    scale = _mm256_blendv_ps(scale, _mm256_div_ps(sum_xl, sum_l2), shifts_up);
    min   = _mm256_andnot_ps(shifts_up, min);
    __m256 error = _mm256_setzero_ps();
    for (int i = 0; i < g.n; ++i) {
        __m256 diff = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(scale, codes[i]), min), _mm256_set1_ps(g.x[i]));
        diff  = g.search->use_mad ? _mm256_andnot_ps(_mm256_set1_ps(-0.f), diff) : _mm256_mul_ps(diff, diff);
        error = _mm256_add_ps(error, _mm256_mul_ps(_mm256_set1_ps(g.weights[i]), diff));
    }
    _mm256_store_ps(out.D, D);
    _mm256_store_ps(out.scale, scale);
    _mm256_store_ps(out.min, min);
    _mm256_store_ps(out.error, error);
}

// Σw·x·l and Σw·l² of eight candidate inverse scales at once.
void symmetric_sums_avx2(int n, int nmax, const float * x, const float * iscales, SymmetricSums * out) {
    const __m256i lo     = _mm256_set1_epi32(-nmax);
    const __m256i hi     = _mm256_set1_epi32(nmax - 1);
    const __m256  iscale = _mm256_loadu_ps(iscales);
    __m256        sumlx = _mm256_setzero_ps(), suml2 = _mm256_setzero_ps();
    for (int i = 0; i < n; ++i) {
        const __m256 xi = _mm256_set1_ps(x[i]);
        const __m256 l  = _mm256_cvtepi32_ps(
            _mm256_max_epi32(lo, _mm256_min_epi32(hi, nearest_int_avx2(_mm256_mul_ps(iscale, xi)))));
        const __m256 w = _mm256_set1_ps(x[i] * x[i]);
        sumlx = _mm256_add_ps(sumlx, _mm256_mul_ps(_mm256_mul_ps(w, xi), l));
        suml2 = _mm256_add_ps(suml2, _mm256_mul_ps(_mm256_mul_ps(w, l), l));
    }
    alignas(32) float lx[kLanes], l2[kLanes];
    _mm256_store_ps(lx, sumlx);
    _mm256_store_ps(l2, suml2);
    for (int k = 0; k < kLanes; ++k) {
        out[k] = {lx[k], l2[k]};
    }
}
#endif

} // namespace

float make_qkx2_quants(int n, int nmax, const float * x, const float * weights, uint8_t * L, float * out_min,
                       const AffineSearch & search) {
    AffineGroup g{n, nmax, x, weights, &search, 0, 0, 0, 0};
    float       scale, best_error;
    if (start_affine_search(g, L, scale, best_error)) {
        uint8_t Laux[MAX_GROUP];
        for (int is = 0; is <= search.nstep; ++is) {
            const float iscale = step_iscale(g, is);
            float       sum_l = 0, sum_l2 = 0, sum_xl = 0;
            for (int i = 0; i < n; ++i) {
                const int l = clamp_code(nearest_int(iscale * (x[i] - g.min)), 0, nmax);
                Laux[i]     = uint8_t(l);
                const float w = weights[i];
                sum_l  += w * float(l);
                sum_l2 += w * float(l) * float(l);
                sum_xl += w * float(l) * x[i];
            }
            // Weighted least squares for (scale, min) given these codes; the offset may only
            // shift values down, else the fit falls back to a pure scale.
            const float D = g.sum_w * sum_l2 - sum_l * sum_l;
            if (D > 0) {
                float this_scale = (g.sum_w * sum_xl - g.sum_x * sum_l) / D;
                float this_min   = (sum_l2 * g.sum_x - sum_l * sum_xl) / D;
                if (this_min > 0) {
                    this_min   = 0;
                    this_scale = sum_xl / sum_l2;
                }
                const float cur_error = weighted_error(g, Laux, this_scale, this_min);
                if (cur_error < best_error) {
                    std::copy(Laux, Laux + n, L);
                    best_error = cur_error;
                    scale      = this_scale;
                    g.min      = this_min;
                }
            }
        }
    }
    *out_min = -g.min;
    return scale;
}

float make_qkx2_quants_fast(int n, int nmax, const float * x, const float * weights, uint8_t * L, float * out_min,
                            const AffineSearch & search) {
#if defined(__AVX2__)
    // The lanes may order the operands of commutative operations differently from the scalar code.
    // That only shows when two NaNs with different payloads meet, which needs a NaN input; then
    // every error is NaN, no step is accepted, and the shared scalar first guess stands in both.
    AffineGroup g{n, nmax, x, weights, &search, 0, 0, 0, 0};
    float       scale, best_error;
    if (start_affine_search(g, L, scale, best_error)) {
        // Steps are accepted in order, as in the scalar loop. A step that moves the min
        // invalidates the later lanes of its batch (they were measured from the old min), so
        // evaluation resumes right after it.
        StepBatch batch;
        for (int first = 0; first <= search.nstep;) {
            evaluate_steps_avx2(g, first, batch);
            const int count = std::min(kLanes, search.nstep + 1 - first);
            int       next  = first + count;
            for (int k = 0; k < count; ++k) {
                if (batch.D[k] > 0 && batch.error[k] < best_error) {
                    for (int i = 0; i < n; ++i) {
                        L[i] = uint8_t(batch.codes[i][k]);
                    }
                    best_error = batch.error[k];
                    scale      = batch.scale[k];
                    if (batch.min[k] != g.min) {
                        g.min = batch.min[k];
                        next  = first + k + 1;
                        break;
                    }
                }
            }
            first = next;
        }
    }
    *out_min = -g.min;
    return scale;
#else
    return make_qkx2_quants(n, nmax, x, weights, L, out_min, search);
#endif
}

float make_q3_quants(int n, int nmax, const float * x, int8_t * L) {
    const float max = first_max_abs(x, n);
    if (std::fabs(max) < GROUP_MAX_EPS) {
        std::fill(L, L + n, int8_t(0));
        return 0.f;
    }
    const float iscale = float(-nmax) / max;
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
    QxState state;
    if (start_qx_search(n, nmax, x, L, state)) {
        for (int is = -9; is <= 9; ++is) {
            if (is != 0) {
                const float iscale = qx_candidate_iscale(nmax, state.max, is);
                consider_qx_candidate(n, nmax, x, iscale, symmetric_sums(n, nmax, x, iscale), L, state);
            }
        }
    }
    return state.scale;
}

float make_qx_quants_fast(int n, int nmax, const float * x, int8_t * L) {
#if defined(__AVX2__)
    // As in make_qkx2_quants_fast: a NaN input makes every candidate's sums NaN, none is accepted.
    QxState state;
    if (start_qx_search(n, nmax, x, L, state)) {
        // The candidates' sums do not depend on each other: compute all 18 (in lanes, padded to
        // 24), then consider them in order.
        constexpr int kCandidates = 18;
        float         iscales[3 * kLanes];
        int           c = 0;
        for (int is = -9; is <= 9; ++is) {
            if (is != 0) {
                iscales[c++] = qx_candidate_iscale(nmax, state.max, is);
            }
        }
        std::fill(iscales + kCandidates, std::end(iscales), iscales[kCandidates - 1]);
        SymmetricSums sums[3 * kLanes];
        for (c = 0; c < kCandidates; c += kLanes) {
            symmetric_sums_avx2(n, nmax, x, iscales + c, sums + c);
        }
        for (c = 0; c < kCandidates; ++c) {
            consider_qx_candidate(n, nmax, x, iscales[c], sums[c], L, state);
        }
    }
    return state.scale;
#else
    return make_qx_quants(n, nmax, x, L);
#endif
}

} // namespace hexnpu::kquant
