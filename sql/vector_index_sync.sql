-- A vec0 index that follows its table: triggers on INSERT, UPDATE and DELETE.
-- Needs sqlite-vec's loadable extension: `make examples` (or `make sqlite-vec`) puts it at ./vec0.so.
--   sqlite3 < sql/vector_index_sync.sql
.bail on
.read sql/require_vec0.sql
.load ./vec0
.load ./bert
.headers on
.mode box
SELECT bert_load('demo', 'model/demo') AS model;

CREATE TEMP TABLE docs(id INTEGER PRIMARY KEY, body TEXT NOT NULL);
CREATE VIRTUAL TABLE temp.docs_vec USING vec0(embedding float[256] distance_metric=cosine);

CREATE TEMP TRIGGER docs_vec_insert AFTER INSERT ON docs BEGIN
  INSERT INTO docs_vec(rowid, embedding) VALUES (new.id, bert_embed(new.body, 'demo'));
END;
-- Only when the text or the id changes; vec0 does not move a vector to
-- another rowid, so the row is deleted and inserted again.
CREATE TEMP TRIGGER docs_vec_update AFTER UPDATE OF id, body ON docs BEGIN
  DELETE FROM docs_vec WHERE rowid = old.id;
  INSERT INTO docs_vec(rowid, embedding) VALUES (new.id, bert_embed(new.body, 'demo'));
END;
CREATE TEMP TRIGGER docs_vec_delete AFTER DELETE ON docs BEGIN
  DELETE FROM docs_vec WHERE rowid = old.id;
END;

INSERT INTO docs(body) VALUES
  ('How to bake sourdough bread at home'),
  ('The history of the Roman empire'),
  ('Training a puppy to sit and stay'),
  ('Why dogs bark at night');
UPDATE docs SET body = 'The fall of ancient Rome explained' WHERE id = 3;
DELETE FROM docs WHERE id = 4;

-- One vector per row, each the embedding of the row's current text.
SELECT d.id, d.body, v.embedding = bert_embed(d.body, 'demo') AS up_to_date
FROM docs AS d JOIN docs_vec AS v ON v.rowid = d.id;

SELECT d.id, d.body, round(v.distance, 4) AS distance
FROM docs_vec AS v JOIN docs AS d ON d.id = v.rowid
WHERE v.embedding MATCH bert_embed('ancient Rome', 'demo') AND k = 2
ORDER BY v.distance;
