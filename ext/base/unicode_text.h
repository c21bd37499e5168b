/*
 * unicode_text.h - UTF-8 decoding and the character classes of BERT's
 * tokenizer, as Hugging Face's Rust tokenizer (the `tokenizers` library)
 * defines them.
 *
 * Properties come from utf8proc.  The Rust library takes its categories from
 * a crate frozen at Unicode 8 and its case mapping from a newer Rust standard
 * library; the few code points where that makes it disagree with utf8proc are
 * kept in small override tables, checked code point by code point against the
 * reference by tests/test_tokenizer.c.
 */
#ifndef BERT_UNICODE_TEXT_H
#define BERT_UNICODE_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define UTEXT_REPLACEMENT 0xFFFD
/* Most code points a canonical decomposition produces (utf8proc gives <= 4). */
#define UTEXT_MAX_DECOMPOSITION 8

/* Decodes the character at s[0..len), len > 0, into *cp and returns the bytes
 * it took (>= 1).  An ill-formed sequence reads as one U+FFFD per maximal
 * subpart, as the WHATWG decoder (and so Node's TextDecoder) does. */
size_t bert_utext_decode(const unsigned char *s, size_t len, int32_t *cp);

/* Writes the UTF-8 form of a valid code point to out (4 bytes room); returns
 * its length. */
size_t bert_utext_encode(int32_t cp, char *out);

/* clean_text drops these: categories Cc, Cf, Co (but not \t \n \r), as the
 * Rust library's is_control sees them. */
int bert_utext_is_control(int32_t cp);

/* The White_Space property (Rust's char::is_whitespace); with \t \n \r these
 * become spaces in clean_text and split words in the pre-tokenizer. */
int bert_utext_is_whitespace(int32_t cp);

/* ASCII 33-47, 58-64, 91-96, 123-126 and categories P*. */
int bert_utext_is_punctuation(int32_t cp);

/* The CJK ideograph blocks of tokenizer.json's handle_chinese_chars. */
int bert_utext_is_chinese(int32_t cp);

/* Category Mn: what strip_accents removes after NFD. */
int bert_utext_is_nonspacing_mark(int32_t cp);

/* What the StripAccents normalizer of tokenizer.json removes: the
 * reference's combining marks (categories M* of its older tables). */
int bert_utext_is_combining_mark(int32_t cp);

/* 1 for a code point the reference's NFKD leaves as it is though
 * utf8proc decomposes it (a character its tables predate). */
int bert_utext_nfkd_kept(int32_t cp);

/* Canonical combining class, for the reordering step of NFD. */
int bert_utext_combining_class(int32_t cp);

/* The full canonical decomposition of one code point (not reordered across
 * characters); returns how many code points went to out. */
int bert_utext_decompose(int32_t cp, int32_t out[UTEXT_MAX_DECOMPOSITION]);

/* The full lowercase mapping (U+0130 gives two code points); returns 1 or 2. */
int bert_utext_lowercase(int32_t cp, int32_t out[2]);

#endif
