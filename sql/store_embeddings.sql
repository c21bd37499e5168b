-- Store embeddings in a column once, query them many times.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model;

CREATE TEMP TABLE notes(id INTEGER PRIMARY KEY, body TEXT, embedding BLOB);
INSERT INTO notes(body) VALUES
  ('Buy milk and eggs on the way home'),
  ('Call the dentist to move the appointment'),
  ('The meeting with the bank is on Friday'),
  ('Pick up fresh vegetables at the market'),
  ('Renew the car insurance before June');

-- Batched: bert_embed_each embeds a whole column in packed batches,
-- much faster than one bert_embed call per row.
UPDATE notes SET embedding = e.embedding
FROM bert_embed_each((SELECT json_group_object(id, body) FROM notes)) AS e
WHERE e.key = CAST(notes.id AS TEXT);

-- Row by row works too: INSERT ... SELECT bert_embed(body) FROM ...
SELECT count(*) AS embedded, length(embedding) AS bytes_each FROM notes WHERE embedding IS NOT NULL;

-- Query the stored vectors: only the question is embedded now.
SELECT body, round(bert_similarity(embedding, 'groceries to get'), 3) AS score
FROM notes ORDER BY score DESC LIMIT 2;
