-- Embeddings that keep themselves up to date: a STORED generated column.
-- SQLite computes it on every INSERT and on every UPDATE of the row; reading
-- it costs nothing.  bert_embed may appear in a generated column because it is
-- registered as deterministic (same text, same registered model: same bytes).
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('demo', 'model/demo') AS model;

CREATE TEMP TABLE notes(
  id INTEGER PRIMARY KEY,
  body TEXT NOT NULL,
  embedding BLOB GENERATED ALWAYS AS (bert_embed(body, 'demo')) STORED
);
INSERT INTO notes(body) VALUES
  ('Buy milk and eggs on the way home'),
  ('Call the dentist to move the appointment'),
  ('Pick up fresh vegetables at the market');

-- Edit a text: its embedding follows.
UPDATE notes SET body = 'Renew the car insurance before June' WHERE id = 2;

SELECT id, body, length(embedding) AS bytes,
       embedding = bert_embed(body, 'demo') AS up_to_date
FROM notes;

-- Search the stored vectors: the rows are not embedded again, only the query.
SELECT id, body, round(bert_similarity(embedding, bert_embed('food from the shop', 'demo')), 3) AS score
FROM notes ORDER BY score DESC LIMIT 2;

-- The model behind a name changed (bert_unload, then bert_load of another
-- directory under the same name)?  Stored values are not recomputed by
-- themselves; rewrite every row to recompute them:
UPDATE notes SET body = body;
