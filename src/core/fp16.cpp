#include "fp16.h"

#if defined(__AVX2__) && defined(__F16C__)
#include <immintrin.h>
#endif

namespace hexnpu {

void fp16_to_fp32_row(const uint16_t * src, float * dst, int64_t n) {
    int64_t i = 0;
#if defined(__AVX2__) && defined(__F16C__)
    // vcvtph2ps is exact for every input, NaN payloads included.
    for (; i + 8 <= n; i += 8) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(src + i));
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
    }
#endif
    for (; i < n; ++i) {
        dst[i] = fp16_to_fp32(src[i]);
    }
}

void fp32_to_fp16_row(const float * src, uint16_t * dst, int64_t n) {
    int64_t i = 0;
#if defined(__AVX2__) && defined(__F16C__)
    // vcvtps2ph rounds like the scalar path but keeps NaN payload bits; GGML's reference
    // writes a canonical 0x7E00, so NaN lanes are patched.
    const __m256i sign_mask = _mm256_set1_epi32(int(0x80000000u));
    for (; i + 8 <= n; i += 8) {
        const __m256  x   = _mm256_loadu_ps(src + i);
        __m128i       h   = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        const __m256  nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
        if (!_mm256_testz_ps(nan, nan)) {
            const __m256i sign  = _mm256_srli_epi32(_mm256_and_si256(_mm256_castps_si256(x), sign_mask), 16);
            const __m256i canon = _mm256_or_si256(sign, _mm256_set1_epi32(0x7e00));
            const __m256i wide  = _mm256_blendv_epi8(_mm256_cvtepu16_epi32(h), canon, _mm256_castps_si256(nan));
            h = _mm_packus_epi32(_mm256_castsi256_si128(wide), _mm256_extracti128_si256(wide, 1));
        }
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + i), h);
    }
#endif
    for (; i < n; ++i) {
        dst[i] = fp32_to_fp16(src[i]);
    }
}

void bf16_to_fp32_row(const uint16_t * src, float * dst, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {  // a shift per element: the compiler vectorizes it
        dst[i] = bf16_to_fp32(src[i]);
    }
}

void fp32_to_bf16_row(const float * src, uint16_t * dst, int64_t n) {
    // The scalar form auto-vectorizes well (measured faster than a hand-written AVX2 blend path).
    for (int64_t i = 0; i < n; ++i) {
        dst[i] = fp32_to_bf16(src[i]);
    }
}

} // namespace hexnpu
