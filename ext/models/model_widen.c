/*
 * model_widen.c - what loading does with the bound tensors: float32 ones
 * stay in the read-only mapping (the page cache is the only copy, shared
 * with every other process that maps the same file); float16 and bfloat16
 * ones (and the rare misaligned float32 one) are widened into one
 * allocation, and when nothing is left in the mapping it is dropped at
 * once.  At a reduced precision the layers' projections go into a second
 * block as bfloat16 or int8 (a bfloat16 tensor stays in the mapping), and
 * the pages of what was converted are given back.  At float32, on a CPU
 * with panel kernels (AVX2 or AVX-512), the projections read in place are
 * also packed once into that block (linear.h, BERT_PANEL), which the panel
 * kernels stream for every product; the packed block is memory of its
 * own, the size of the projections (bert-base: 340 MB), and the mapping's
 * pages read to pack it are given back, so that the process holds the
 * projections once.
 * Likewise at int8
 * and bfloat16 on a CPU with AMX (int8 also where AVX2 is the best int8
 * product, for its panel kernel), the projections are also laid out as AMX
 * tiles (bert-base: 85 and 170 MB more).
 */
#include "model_bind.h"
#include "../kernels/cpu.h"
#include "../base/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

/* Tensor data is little-endian and used in place. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "model_widen.c reads little-endian safetensors data in place; big-endian hosts are not supported"
#endif

/* float16 and bfloat16 widen to float32 exactly, subnormals, infinities and
 * NaN payloads included. */
static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff, bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | mant << 13;
    } else if (exp) {
        bits = sign | (exp + 112) << 23 | mant << 13;
    } else if (!mant) {
        bits = sign;
    } else {
        /* subnormal: mant * 2^-24, renormalised */
        uint32_t e = 113;
        while (!(mant & 0x400)) { mant <<= 1; e--; }
        bits = sign | e << 23 | (mant & 0x3ff) << 13;
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static int in_place(const st_tensor *t)
{
    return t->dtype == ST_F32 && (uintptr_t)t->data % sizeof(float) == 0;
}

/* n elements of tensor t from element `first` on, as float32 into out. */
static void widen(const st_tensor *t, size_t first, size_t n, float *out)
{
    if (t->dtype == ST_F32) {
        memcpy(out, t->data + first * sizeof(float), n * sizeof(float));
        return;
    }
    const unsigned char *p = t->data + first * sizeof(uint16_t);
    for (size_t i = 0; i < n; i++) {
        uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
        out[i] = t->dtype == ST_F16 ? f16_to_f32(h) : bert_f32_from_bf16(h);
    }
}

static void convert(const st_tensor *t, float *out)
{
    widen(t, 0, t->count, out);
}

void bert_tensor_widen(const st_tensor *t, float *out)
{
    convert(t, out);
}

/* Row r of tensor t as float32: in place when it can be, else widened
 * into row_buf. */
static const float *float_row(const st_tensor *t, size_t r, size_t cols, float *row_buf)
{
    if (in_place(t)) return (const float *)(const void *)t->data + r * cols;
    widen(t, r * cols, cols, row_buf);
    return row_buf;
}

/* Where the projections leave the mapping (converted to a reduced
 * precision, or packed at float32), the 1-D float32 tensors (biases,
 * LayerNorms) are copied out of it too: they lie between the projections
 * whose pages are released, and a read of one in place makes the kernel map
 * back the whole page-cache folio around it, megabytes of those projections. */
static int copied_at(const st_tensor *t, bert_precision p, int pack)
{
    return (p != BERT_PRECISION_FLOAT32 || pack) && t->ndim == 1;
}

/* A bfloat16 tensor at bfloat16 precision is used where it lies. */
static int bf16_in_place(const st_tensor *t)
{
    return t->dtype == ST_BF16 && (uintptr_t)t->data % sizeof(uint16_t) == 0;
}

/* Whether the model reads tensor t (bound to `mat`, or to a float32
 * pointer when mat is NULL) where it lies in the mapping. */
static int used_in_place(const st_tensor *t, const bert_matrix *mat, bert_precision p, int pack)
{
    if (mat && p != BERT_PRECISION_FLOAT32) return p == BERT_PRECISION_BFLOAT16 && bf16_in_place(t);
    return in_place(t) && !copied_at(t, p, pack);
}

/* The projections' blocks start on cache lines, for the vector kernels. */
#define REDUCED_ALIGN 64
static size_t align_up(size_t n) { return (n + REDUCED_ALIGN - 1) & ~(size_t)(REDUCED_ALIGN - 1); }

/* 1 when float32 projections are packed for the panel kernels: where this
 * build has them, the CPU (within SQLITE_BERT_ISA) runs them, and
 * SQLITE_BERT_PACK is not "0" (which saves their memory). */
static int packs_f32(void)
{
#ifdef BERT_X86_KERNELS
    const char *pack = getenv("SQLITE_BERT_PACK");
    return bert_cpu_isa() >= BERT_ISA_AVX2 && !(pack && strcmp(pack, "0") == 0);
#else
    return 0;
#endif
}

/* 1 when int8 or bfloat16 projections are also laid out as AMX tiles: the
 * CPU (within SQLITE_BERT_ISA) has AMX for precision p and SQLITE_BERT_PACK
 * is not "0".  The tiles are a second copy of the projections at their
 * precision (bert-base: 85 MB at int8, 170 MB at bfloat16): the kernels of
 * a product of a few rows read W row by row. */
static int packs_tiles(bert_precision p)
{
    const char *pack = getenv("SQLITE_BERT_PACK");
    unsigned need = p == BERT_PRECISION_INT8 ? BERT_CPU_AMX_INT8 : p == BERT_PRECISION_BFLOAT16 ? BERT_CPU_AMX_BF16 : 0;
    /* Where AVX2's vpmaddubsw is the best int8 product, its panel kernel
     * reads the same layout (bert_int8_packed_avx2), for products of many
     * rows: on 450-token texts it ran int8 ahead of float32 twice where
     * the few-rows kernel did 1.2 times.  Where AVX2 is the best for
     * bfloat16, its panel kernel does too (bert_bf16_packed_avx2): the
     * few-rows kernel ran bfloat16 at 0.55 times float32 on them. */
    int avx2 = (p == BERT_PRECISION_INT8 && bert_int8_avx2_tiles(bert_cpu_isa(), bert_cpu_extensions())) ||
               (p == BERT_PRECISION_BFLOAT16 && bert_bf16_avx2_tiles(bert_cpu_isa(), bert_cpu_extensions()));
    return (avx2 || (need && (bert_cpu_extensions() & need))) && !(pack && strcmp(pack, "0") == 0);
}

/* Bytes of the reduced block that tensor t takes at precision p: at
 * float32, its packed panels (when `pack`); at int8 and bfloat16, its
 * tiles too (when `pack`). */
static size_t reduced_size(const st_tensor *t, bert_precision p, int pack)
{
    size_t rows = (size_t)t->shape[0], count = t->count;
    int cols = (int)t->shape[1];
    if (p == BERT_PRECISION_FLOAT32)
        return pack && in_place(t) ? align_up(bert_f32_packed_floats((int)rows, cols) * sizeof(float)) : 0;
    size_t tiles = pack ? align_up(bert_tiles_bytes((int)rows, cols, p)) : 0;
    if (p == BERT_PRECISION_BFLOAT16) return (bf16_in_place(t) ? 0 : align_up(count * sizeof(uint16_t))) + tiles;
    if (p == BERT_PRECISION_INT8)
        return align_up(count) + align_up(rows * sizeof(float)) + align_up(rows * sizeof(int32_t)) + tiles;
    return 0;
}

/* Fills *mat with tensor t at precision p, carving its arrays from *next
 * (reduced_size(t, p, pack) bytes) and converting row by row through row_buf. */
static void reduce(const st_tensor *t, bert_precision p, int pack, unsigned char **next, float *row_buf,
                   bert_matrix *mat)
{
    size_t rows = (size_t)t->shape[0], cols = (size_t)t->shape[1];
    mat->precision = p;
    if (p == BERT_PRECISION_BFLOAT16) {
        if (bf16_in_place(t)) {
            mat->bf16 = (const uint16_t *)(const void *)t->data;
        } else {
            uint16_t *out = (uint16_t *)(void *)*next;
            *next += align_up(t->count * sizeof(uint16_t));
            for (size_t r = 0; r < rows; r++)
                bert_bf16_from_f32(out + r * cols, float_row(t, r, cols, row_buf), cols);
            mat->bf16 = out;
        }
    } else {
        int8_t *q = (int8_t *)(void *)*next;
        *next += align_up(t->count);
        float *scale = (float *)(void *)*next;
        *next += align_up(rows * sizeof(float));
        int32_t *row_sum = (int32_t *)(void *)*next;
        *next += align_up(rows * sizeof(int32_t));
        /* One row at a time: a row's scale depends on that row alone. */
        for (size_t r = 0; r < rows; r++)
            bert_int8_quantize_rows(q + r * cols, scale + r, row_sum + r, float_row(t, r, cols, row_buf), 1,
                                    (int)cols);
        mat->i8 = q;
        mat->scale = scale;
        mat->row_sum = row_sum;
    }
    if (pack) {
        void *tiles = *next;
        *next += align_up(bert_tiles_bytes((int)rows, (int)cols, p));
        bert_tiles_pack(tiles, p == BERT_PRECISION_INT8 ? (const void *)mat->i8 : (const void *)mat->bf16, (int)rows,
                        (int)cols, p);
        mat->tiles = tiles;
    }
}

/* Asks for the whole 2 MB pages inside a block not yet written to be
 * transparent huge pages (Linux, where the system leaves it to madvise).
 * The kernels stream the packed weights and tiles once a sentence, and
 * with 4 KB pages every 4 KB is a TLB miss and a stop of the hardware
 * prefetcher: bert-base, 100 sentences row by row on two threads (Xeon,
 * AVX-512, AMX), int8 0.45-0.51 s -> 0.44-0.45 s, float32 (the panel
 * kernel) 2.09-2.12 -> 2.01-2.10.  Refused, or on other systems, nothing
 * changes but the speed. */
static void ask_huge_pages(void *block, size_t bytes)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = ((uintptr_t)block + huge - 1) & ~(huge - 1), hi = ((uintptr_t)block + bytes) & ~(huge - 1);
    if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)block;
    (void)bytes;
#endif
}

/* Points every bound weight at its data: float32 in place, else converted
 * into one block; the projections at a reduced precision into another.  A
 * tensor converted from the mapping has its pages released: the file is
 * not read again, and the resident set should not hold it twice. */
int bert_bind_materialize(binder *b, model_priv *priv, bert_model *m)
{
    const bert_precision p = m->precision;
    const int pack = p == BERT_PRECISION_FLOAT32 ? packs_f32() : packs_tiles(p);
    size_t floats = 0, reduced = 0, cols_max = 0;
    for (int i = 0; i < b->count; i++) {
        const st_tensor *t = b->list[i].t;
        if (b->list[i].matrix) reduced += reduced_size(t, p, pack);
        if (b->list[i].matrix && p != BERT_PRECISION_FLOAT32) {
            if (reduced_size(t, p, pack) && (size_t)t->shape[1] > cols_max) cols_max = (size_t)t->shape[1];
        } else if (!in_place(t) || copied_at(t, p, pack)) {
            floats += t->count;   /* bounded by the file size */
        }
    }
    if (floats) {
        priv->converted = malloc(floats * sizeof(float));
        if (!priv->converted) {
            *b->err = bert_errorf("out of memory converting %zu MB of %s weights to float32",
                                  floats * sizeof(float) >> 20, b->file);
            return -1;
        }
        ask_huge_pages(priv->converted, floats * sizeof(float));
    }
    float *row_buf = NULL;
    unsigned char *next_reduced = NULL;
    if (reduced) {
        priv->reduced = malloc(reduced + REDUCED_ALIGN);
        row_buf = malloc((cols_max ? cols_max : 1) * sizeof(float));
        if (!priv->reduced || !row_buf) {
            free(row_buf);
            *b->err = bert_errorf("out of memory holding %zu MB of %s weights as %s", reduced >> 20, b->file,
                                  bert_precision_name(p));
            return -1;
        }
        ask_huge_pages(priv->reduced, reduced + REDUCED_ALIGN);
        uintptr_t at = (uintptr_t)priv->reduced;
        next_reduced = (unsigned char *)priv->reduced + (align_up(at) - at);
    }
    float *next = priv->converted;
    int mapped = 0;
    for (int i = 0; i < b->count; i++) {
        const st_tensor *t = b->list[i].t;
        bert_matrix *mat = b->list[i].matrix;
        mapped |= used_in_place(t, mat, p, pack);
        if (mat && p != BERT_PRECISION_FLOAT32) {
            reduce(t, p, pack, &next_reduced, row_buf, mat);
            continue;
        }
        const float *data;
        if (used_in_place(t, mat, p, pack)) {
            data = (const float *)(const void *)t->data;
        } else {
            convert(t, next);
            data = next;
            next += t->count;
        }
        if (mat) {
            mat->precision = BERT_PRECISION_FLOAT32;
            mat->f32 = data;
            if (reduced_size(t, p, pack)) {
                float *panels = (float *)(void *)next_reduced;
                next_reduced += reduced_size(t, p, pack);
                bert_f32_pack(panels, data, (int)t->shape[0], (int)t->shape[1]);
                mat->f32_packed = panels;
            }
        } else {
            *b->list[i].dst = data;
        }
    }
    free(row_buf);
    m->converted_bytes = floats * sizeof(float);
    /* The packed copies (float32 panels, int8 tiles) apart from the
     * projections at their precision. */
    size_t packed = 0;
    for (int i = 0; pack && i < b->count; i++)
        if (b->list[i].matrix)
            packed += p == BERT_PRECISION_FLOAT32
                          ? reduced_size(b->list[i].t, p, pack)
                          : align_up(bert_tiles_bytes((int)b->list[i].t->shape[0], (int)b->list[i].t->shape[1], p));
    m->reduced_bytes = reduced - packed;
    m->packed_bytes = packed;
    if (!mapped) {
        bert_safetensors_close(priv->st);
        priv->st = NULL;
        return 0;
    }
    /* Released last: reading a tensor maps back the page-cache folio
     * around it, which may hold the pages of one converted before.  A
     * packed projection's pages go too: the panel kernels take every
     * float32 product where W is packed, so the packed copy is the one the
     * process holds (a product sent elsewhere would read the file again). */
    for (int i = 0; i < b->count; i++) {
        const bert_matrix *mat = b->list[i].matrix;
        if (!used_in_place(b->list[i].t, mat, p, pack) || (mat && mat->f32_packed))
            bert_safetensors_release(priv->st, b->list[i].t);
    }
    return 0;
}

