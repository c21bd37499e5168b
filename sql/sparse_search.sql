-- Learned sparse retrieval (SPLADE): every document's term weights in an
-- ordinary inverted-index table, filled from bert_sparse_terms; a query's
-- terms joined to it, score = the dot product of the two sparse vectors.
--   sqlite3 < sql/sparse_search.sql
-- The demo model is a plain masked-LM checkpoint: a SPLADE model
-- (naver/splade-v3, opensearch-neural-sparse-encoding-doc-v2-distill ...)
-- registered the same way gives weights trained for retrieval.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('splade', 'model/demo') AS model;

CREATE TEMP TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL);
-- The postings: one row per (term, document), keyed so that a query term
-- reads its documents from the primary key.
CREATE TEMP TABLE docs_sparse(
  token_id INTEGER NOT NULL,
  doc_id INTEGER NOT NULL,
  weight REAL NOT NULL,
  PRIMARY KEY (token_id, doc_id)
) WITHOUT ROWID;
-- A document's postings by doc_id, to delete or replace them.
CREATE INDEX temp.docs_sparse_doc ON docs_sparse(doc_id);

INSERT INTO docs(body) VALUES
  ('How to bake sourdough bread at home'),
  ('The history of the Roman empire'),
  ('Training a puppy to sit and stay'),
  ('A recipe for banana bread with walnuts'),
  ('Julius Caesar crossed the Rubicon'),
  ('Why does my dog bark at night?');

-- The 64 heaviest terms of each document (a model not trained for sparsity
-- gives weight to most of its vocabulary; a SPLADE model to a few hundred).
INSERT INTO docs_sparse(token_id, doc_id, weight)
SELECT t.token_id, d.id, t.weight
FROM docs AS d, bert_sparse_terms(d.body, '{"model": "splade", "top_k": 64}') AS t;

-- One document's heaviest terms, as JSON.
SELECT bert_sparse('Training a puppy to sit and stay', '{"model": "splade", "top_k": 8}') AS terms;

-- Search: the query's terms joined to the postings.
WITH query AS (
  SELECT token_id, weight FROM bert_sparse_terms('teaching a young dog', '{"model": "splade", "top_k": 64}')
)
SELECT d.id, d.body, round(sum(q.weight * p.weight), 3) AS score
FROM query AS q
JOIN docs_sparse AS p ON p.token_id = q.token_id
JOIN docs AS d ON d.id = p.doc_id
GROUP BY d.id
ORDER BY score DESC, d.id
LIMIT 3;
