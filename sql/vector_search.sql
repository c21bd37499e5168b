-- Vector search with sqlite-vec: a vec0 index filled from bert_embed_each,
-- a KNN query, and the same answer by brute force.
-- Needs sqlite-vec's loadable extension: `make examples` (or `make sqlite-vec`) puts it at ./vec0.so.
--   sqlite3 < sql/vector_search.sql
.bail on
.read sql/require_vec0.sql
.load ./vec0
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model, vec_version() AS sqlite_vec;

CREATE TEMP TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL);
INSERT INTO docs(body) VALUES
  ('How to bake sourdough bread at home'),
  ('The history of the Roman empire'),
  ('Training a puppy to sit and stay'),
  ('Ten tips for a faster kitchen routine'),
  ('Why dogs bark at night'),
  ('The fall of ancient Rome explained'),
  ('A beginner''s guide to growing tomatoes'),
  ('What to feed a new kitten'),
  ('Choosing running shoes for long distances'),
  ('The best bread flour for a crisp crust');

-- The index: one float32 vector per document, cosine distance.  bert_embed's
-- BLOB (subtype 223) is sqlite-vec's float32 format, so it goes in as is.
-- (Long documents: index chunks instead of whole texts; see the README.)
CREATE VIRTUAL TABLE temp.docs_vec USING vec0(embedding float[256] distance_metric=cosine);

-- Filled in one statement from batched embeddings (the key is the row id).
INSERT INTO docs_vec(rowid, embedding)
SELECT CAST(key AS INTEGER), embedding
FROM bert_embed_each((SELECT json_group_object(id, body) FROM docs));

-- KNN: the 3 nearest documents.  `k = 3` is the number of neighbours.
SELECT d.id, d.body, round(v.distance, 4) AS distance
FROM docs_vec AS v JOIN docs AS d ON d.id = v.rowid
WHERE v.embedding MATCH bert_embed('ancient Rome') AND k = 3
ORDER BY v.distance;

-- The same question by brute force: bert_similarity against every row.
-- vec0's cosine distance is 1 - bert_similarity.
SELECT id, body, round(1 - bert_similarity(body, 'ancient Rome'), 4) AS distance
FROM docs ORDER BY distance LIMIT 3;

-- Both rankings side by side for another query: the same ids, the same distances.
WITH knn AS (
  SELECT row_number() OVER (ORDER BY distance) AS rank, rowid AS id, distance
  FROM docs_vec WHERE embedding MATCH bert_embed('fresh bread') AND k = 5
), brute AS (
  SELECT row_number() OVER (ORDER BY d) AS rank, id, d AS distance
  FROM (SELECT id, 1 - bert_similarity(body, 'fresh bread') AS d FROM docs)
  ORDER BY d LIMIT 5
)
SELECT knn.rank, knn.id AS knn_id, brute.id AS brute_id,
       round(knn.distance, 6) AS knn_distance, round(brute.distance, 6) AS brute_distance
FROM knn JOIN brute USING (rank) ORDER BY knn.rank;
