-- Late interaction (ColBERT) reranking: sqlite-vec finds candidates with one
-- vector per document, then bert_maxsim reorders them with one vector per token.
-- Needs sqlite-vec and the generated ColBERT test model: run `make examples` first.
--   sqlite3 < sql/late_interaction.sql
-- build/models/colbert-dense is a ColBERT model as PyLate saves it, with random
-- weights: the scores mean nothing; a real one (lightonai/colbertv2.0 ...)
-- registers the same way.
.bail on
.read sql/require_vec0.sql
.load ./vec0
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS first_stage,
       bert_load('colbert', 'build/models/colbert-dense') AS reranker;

CREATE TEMP TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL, tokens BLOB);
INSERT INTO docs(body) VALUES
  ('How to bake sourdough bread at home'),
  ('The history of the Roman empire'),
  ('Training a puppy to sit and stay'),
  ('Ten tips for a faster kitchen routine'),
  ('Why dogs bark at night'),
  ('The fall of ancient Rome explained'),
  ('A beginner''s guide to growing tomatoes'),
  ('What to feed a new kitten');

-- Each document's token vectors, made once and stored: a BLOB of n x d float32
-- behind a 16-byte header (the document side drops punctuation tokens).
UPDATE docs SET tokens = bert_token_vectors(body, 'document', 'colbert');
SELECT id, body, (length(tokens) - 16) / 4 / 24 AS token_vectors FROM docs;

-- The first stage: one vector per document in a vec0 index.
CREATE VIRTUAL TABLE temp.docs_vec USING vec0(embedding float[256] distance_metric=cosine);
INSERT INTO docs_vec(rowid, embedding) SELECT id, bert_embed(body) FROM docs;

-- The 5 nearest candidates, reranked by MaxSim against the query's token
-- vectors (computed once: a constant argument).
WITH candidates AS (
  SELECT rowid AS id, distance FROM docs_vec
  WHERE embedding MATCH bert_embed('the end of ancient Rome') AND k = 5
)
SELECT d.id, d.body, round(c.distance, 4) AS distance,
       round(bert_maxsim(bert_token_vectors('the end of ancient Rome', 'query', 'colbert'), d.tokens), 4) AS maxsim
FROM candidates AS c JOIN docs AS d ON d.id = c.id
ORDER BY maxsim DESC;
