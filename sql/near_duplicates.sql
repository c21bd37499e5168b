-- Near-duplicate detection: pairs of rows that say the same thing.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model;

CREATE TEMP TABLE reviews(id INTEGER PRIMARY KEY, body TEXT, embedding BLOB);
INSERT INTO reviews(body) VALUES
  ('The delivery was fast and the box arrived intact.'),
  ('Shipping was quick and the package came undamaged.'),
  ('The colour is different from the picture.'),
  ('Great battery life, lasts all week.'),
  ('The battery lasts a whole week, great.'),
  ('The colour does not match the photo.');
UPDATE reviews SET embedding = bert_embed(body);

SELECT a.id AS a, b.id AS b, round(bert_similarity(a.embedding, b.embedding), 3) AS similarity,
       a.body AS first, b.body AS second
FROM reviews a JOIN reviews b ON a.id < b.id
ORDER BY similarity DESC LIMIT 3;
