/*
 * hsum_x86.h - four horizontal sums at once, for the x86 kernels
 * (kernels_avx2.c, kernels_avx512.c): the sums of a
 * block's accumulators, half the shuffles of summing each alone, which
 * matters when a row is only 384 wide.  Empty where cpu.h defines no
 * BERT_X86_KERNELS.
 */
#ifndef BERT_HSUM_X86_H
#define BERT_HSUM_X86_H

#include "cpu.h"

#ifdef BERT_X86_KERNELS
#include <immintrin.h>

/* [sum(a), sum(b), sum(c), sum(d)] */
BERT_TARGET_AVX512 BERT_INLINE __m128 hsum4_512(__m512 a, __m512 b, __m512 c, __m512 d)
{
    /* Within each 128-bit lane: [a0+a2, b0+b2, a1+a3, b1+b3], the same for c, d ... */
    __m512 ab = _mm512_add_ps(_mm512_unpacklo_ps(a, b), _mm512_unpackhi_ps(a, b));
    __m512 cd = _mm512_add_ps(_mm512_unpacklo_ps(c, d), _mm512_unpackhi_ps(c, d));
    /* ... then [a, b, c, d] summed over the lane ... */
    __m512d abd = _mm512_castps_pd(ab), cdd = _mm512_castps_pd(cd);
    __m512 all = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(abd, cdd)),
                               _mm512_castpd_ps(_mm512_unpackhi_pd(abd, cdd)));
    /* ... and the four lanes added together. */
    __m256 half = _mm256_add_ps(_mm512_castps512_ps256(all),
                                _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(all), 1)));
    return _mm_add_ps(_mm256_castps256_ps128(half), _mm256_extractf128_ps(half, 1));
}

BERT_TARGET_AVX512 BERT_INLINE __m128i hsum4_512i(__m512i a, __m512i b, __m512i c, __m512i d)
{
    __m512i ab = _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
    __m512i cd = _mm512_add_epi32(_mm512_unpacklo_epi32(c, d), _mm512_unpackhi_epi32(c, d));
    __m512i all = _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
    __m256i half = _mm256_add_epi32(_mm512_castsi512_si256(all), _mm512_extracti64x4_epi64(all, 1));
    return _mm_add_epi32(_mm256_castsi256_si128(half), _mm256_extracti128_si256(half, 1));
}

BERT_TARGET_AVX2 BERT_INLINE __m128 hsum4_256(__m256 a, __m256 b, __m256 c, __m256 d)
{
    __m256 ab = _mm256_add_ps(_mm256_unpacklo_ps(a, b), _mm256_unpackhi_ps(a, b));
    __m256 cd = _mm256_add_ps(_mm256_unpacklo_ps(c, d), _mm256_unpackhi_ps(c, d));
    __m256d abd = _mm256_castps_pd(ab), cdd = _mm256_castps_pd(cd);
    __m256 all = _mm256_add_ps(_mm256_castpd_ps(_mm256_unpacklo_pd(abd, cdd)),
                               _mm256_castpd_ps(_mm256_unpackhi_pd(abd, cdd)));
    return _mm_add_ps(_mm256_castps256_ps128(all), _mm256_extractf128_ps(all, 1));
}

BERT_TARGET_AVX2 BERT_INLINE __m128i hsum4_256i(__m256i a, __m256i b, __m256i c, __m256i d)
{
    __m256i ab = _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
    __m256i cd = _mm256_add_epi32(_mm256_unpacklo_epi32(c, d), _mm256_unpackhi_epi32(c, d));
    __m256i all = _mm256_add_epi32(_mm256_unpacklo_epi64(ab, cd), _mm256_unpackhi_epi64(ab, cd));
    return _mm_add_epi32(_mm256_castsi256_si128(all), _mm256_extracti128_si256(all, 1));
}

#endif /* BERT_X86_KERNELS */
#endif
