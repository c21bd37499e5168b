-- Semantic search: rank the rows of a table by meaning, not by keywords.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model;

CREATE TEMP TABLE articles(id INTEGER PRIMARY KEY, title TEXT);
INSERT INTO articles(title) VALUES
  ('How to bake sourdough bread at home'),
  ('The history of the Roman empire'),
  ('Training a puppy to sit and stay'),
  ('Ten tips for a faster kitchen routine'),
  ('Why dogs bark at night'),
  ('The fall of ancient Rome explained');

SELECT id, title, round(bert_similarity(title, 'caring for a young dog'), 3) AS score
FROM articles ORDER BY score DESC LIMIT 3;

SELECT id, title, round(bert_similarity(title, 'emperors and legions'), 3) AS score
FROM articles ORDER BY score DESC LIMIT 3;
