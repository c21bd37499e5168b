-- Hybrid search: FTS5's BM25, a sqlite-vec KNN index and a learned sparse
-- index over one table, kept in sync by triggers, fused by reciprocal-rank
-- fusion (score = sum over the rankings of 1 / (60 + rank)), in plain SQL.
-- Needs sqlite-vec's loadable extension: `make examples` (or `make sqlite-vec`) puts it at ./vec0.so.
--   sqlite3 < sql/hybrid_search.sql
.bail on
.read sql/require_vec0.sql
.load ./vec0
.load ./bert
.headers on
.mode box
SELECT bert_load('demo', 'model/demo') AS model;

CREATE TEMP TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL);

-- The three indexes of docs.
CREATE VIRTUAL TABLE temp.docs_fts USING fts5(body, content='docs', content_rowid='id');
CREATE VIRTUAL TABLE temp.docs_vec USING vec0(embedding float[256] distance_metric=cosine);
CREATE TEMP TABLE docs_sparse(
  token_id INTEGER NOT NULL,
  doc_id INTEGER NOT NULL,
  weight REAL NOT NULL,
  PRIMARY KEY (token_id, doc_id)
) WITHOUT ROWID;
CREATE INDEX temp.docs_sparse_doc ON docs_sparse(doc_id);

-- Kept in sync: a row's entries follow it on INSERT, UPDATE and DELETE.
CREATE TEMP TRIGGER docs_insert AFTER INSERT ON docs BEGIN
  INSERT INTO docs_fts(rowid, body) VALUES (new.id, new.body);
  INSERT INTO docs_vec(rowid, embedding) VALUES (new.id, bert_embed(new.body, 'demo'));
  INSERT INTO docs_sparse(token_id, doc_id, weight)
    SELECT token_id, new.id, weight FROM bert_sparse_terms(new.body, '{"model": "demo", "top_k": 64}');
END;
CREATE TEMP TRIGGER docs_update AFTER UPDATE OF id, body ON docs BEGIN
  INSERT INTO docs_fts(docs_fts, rowid, body) VALUES ('delete', old.id, old.body);
  INSERT INTO docs_fts(rowid, body) VALUES (new.id, new.body);
  -- vec0 does not move a vector to another rowid: delete, then insert.
  DELETE FROM docs_vec WHERE rowid = old.id;
  INSERT INTO docs_vec(rowid, embedding) VALUES (new.id, bert_embed(new.body, 'demo'));
  DELETE FROM docs_sparse WHERE doc_id = old.id;
  INSERT INTO docs_sparse(token_id, doc_id, weight)
    SELECT token_id, new.id, weight FROM bert_sparse_terms(new.body, '{"model": "demo", "top_k": 64}');
END;
CREATE TEMP TRIGGER docs_delete AFTER DELETE ON docs BEGIN
  INSERT INTO docs_fts(docs_fts, rowid, body) VALUES ('delete', old.id, old.body);
  DELETE FROM docs_vec WHERE rowid = old.id;
  DELETE FROM docs_sparse WHERE doc_id = old.id;
END;

-- The search to run: the text, and the same words as an FTS5 query (FTS5
-- has its own syntax: quote each word of a user's text, joined by OR).
CREATE TEMP TABLE search(query TEXT NOT NULL, fts_query TEXT NOT NULL);

-- Each ranking: id and rank (1 = best), its best 20 documents.
-- (The KNN and the BM25 scores are materialized first: neither vec0 nor
-- FTS5 runs its ranking function inside a window's ORDER BY.)
CREATE TEMP VIEW ranked_fts AS
  WITH matches AS MATERIALIZED (
    SELECT rowid AS id, bm25(docs_fts) AS score
    FROM docs_fts WHERE docs_fts MATCH (SELECT fts_query FROM search)
    ORDER BY score, id LIMIT 20)
  SELECT id, row_number() OVER (ORDER BY score, id) AS rank FROM matches;
CREATE TEMP VIEW ranked_vec AS
  WITH knn AS MATERIALIZED (
    SELECT rowid AS id, distance
    FROM docs_vec WHERE embedding MATCH (SELECT bert_embed(query, 'demo') FROM search) AND k = 20)
  SELECT id, row_number() OVER (ORDER BY distance, id) AS rank FROM knn;
CREATE TEMP VIEW ranked_sparse AS
  SELECT id, row_number() OVER (ORDER BY score DESC, id) AS rank
  FROM (SELECT p.doc_id AS id, sum(q.weight * p.weight) AS score
        FROM search AS s, bert_sparse_terms(s.query, '{"model": "demo", "top_k": 64}') AS q
        JOIN docs_sparse AS p ON p.token_id = q.token_id
        GROUP BY p.doc_id)
  ORDER BY rank LIMIT 20;
-- Reciprocal-rank fusion with k = 60: a document high in any ranking rises.
CREATE TEMP VIEW hybrid AS
  SELECT id, sum(1.0 / (60 + rank)) AS score
  FROM (SELECT id, rank FROM ranked_fts
        UNION ALL SELECT id, rank FROM ranked_vec
        UNION ALL SELECT id, rank FROM ranked_sparse)
  GROUP BY id;

INSERT INTO docs(body) VALUES
  ('How to bake sourdough bread at home'),
  ('The history of the Roman empire'),
  ('Training a puppy to sit and stay'),
  ('A recipe for banana bread with walnuts'),
  ('Julius Caesar crossed the Rubicon'),
  ('Why does my dog bark at night?'),
  ('Dog training classes for puppies'),
  ('The fall of Rome and the barbarian invasions');
UPDATE docs SET body = 'Crossing the Rubicon: Caesar and the Roman republic' WHERE id = 5;
DELETE FROM docs WHERE id = 4;

INSERT INTO search VALUES ('teaching a young dog', '"teaching" OR "young" OR "dog"');

-- The three rankings side by side, then the fused one.
SELECT d.id, d.body, f.rank AS bm25, v.rank AS vector, s.rank AS sparse, round(h.score, 5) AS rrf
FROM hybrid AS h JOIN docs AS d ON d.id = h.id
LEFT JOIN ranked_fts AS f ON f.id = h.id
LEFT JOIN ranked_vec AS v ON v.id = h.id
LEFT JOIN ranked_sparse AS s ON s.id = h.id
ORDER BY h.score DESC, h.id
LIMIT 5;
