-- Binary quantization with rescoring: 1 bit per dimension in a vec0 bit[N]
-- index searched by Hamming distance, then the best candidates rescored with
-- their float32 vectors (as sentence-transformers' "Embedding Quantization"
-- guide does).  32 times less index memory, nearly the same ranking.
-- Needs sqlite-vec's loadable extension: `make examples` (or `make sqlite-vec`) puts it at ./vec0.so.
--   sqlite3 < sql/binary_rescore.sql
.bail on
.read sql/require_vec0.sql
.load ./vec0
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model;

CREATE TEMP TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL, embedding BLOB);
INSERT INTO docs(body) VALUES
  ('Julius Caesar crossed the Rubicon'),
  ('A quick weeknight pasta with garlic'),
  ('Gladiators fought in the Colosseum'),
  ('How often to water a cactus'),
  ('The aqueducts that carried water to Rome'),
  ('Packing light for a week of hiking'),
  ('Fixing a flat bicycle tyre'),
  ('Emperors and senators of the old republic'),
  ('Brewing coffee with a French press'),
  ('Planting tulip bulbs in autumn');
-- The float32 vectors stay with the rows (or on disk elsewhere): only the
-- candidates' are read at query time.
UPDATE docs SET embedding = bert_embed(body);

-- The index holds bits: bert_quantize(v, 'binary') is sqlite-vec's bit[256]
-- (the sign of each value, least significant bit first in each byte).
CREATE VIRTUAL TABLE temp.docs_bits USING vec0(embedding bit[256]);
INSERT INTO docs_bits(rowid, embedding)
SELECT id, bert_quantize(embedding, 'binary') FROM docs;

-- Step 1: the 6 nearest by Hamming distance over the bits (fast, coarse).
-- Step 2: those 6 rescored by cosine similarity of the float32 vectors, best 3 kept.
WITH query AS (SELECT bert_embed('ancient Rome') AS v),
candidates AS (
  SELECT rowid AS id, distance AS hamming FROM docs_bits
  WHERE embedding MATCH (SELECT bert_quantize(v, 'binary') FROM query) AND k = 6
)
SELECT d.id, d.body, c.hamming,
       round(bert_similarity(d.embedding, (SELECT v FROM query)), 4) AS rescored
FROM candidates AS c JOIN docs AS d ON d.id = c.id
ORDER BY rescored DESC LIMIT 3;

-- The same with int8 (1 byte per dimension): sqlite-vec's int8[256] from
-- bert_quantize(v, 'int8'), the range [-1, 1] in 255 steps.
CREATE VIRTUAL TABLE temp.docs_int8 USING vec0(embedding int8[256] distance_metric=cosine);
INSERT INTO docs_int8(rowid, embedding)
SELECT id, bert_quantize(embedding, 'int8') FROM docs;
SELECT rowid AS id, round(distance, 4) AS int8_cosine_distance FROM docs_int8
WHERE embedding MATCH bert_quantize(bert_embed('ancient Rome'), 'int8') AND k = 3;

-- Shorter vectors (Matryoshka models keep most of their quality in the
-- first values): 64 of 256 values, renormalised, then 64 bits.
SELECT id, body,
       vec_distance_hamming(bert_quantize(bert_truncate(embedding, 64), 'binary'),
                            bert_quantize(bert_embed('ancient Rome', '{"dimensions": 64}'), 'binary')) AS hamming_64
FROM docs ORDER BY hamming_64, id LIMIT 3;
