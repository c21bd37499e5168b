-- Retrieve, then rerank: the embedding model finds the 100 nearest rows by
-- vector, a cross-encoder reads the query together with each of them and
-- keeps the 10 it judges most relevant, all in one statement.
-- model/demo-reranker is the demo cross-encoder: it scores how likely two
-- sentences come from the same document (a Bible chapter, a State of the
-- Union address, a chapter of Moby Dick ...); see model/README.md.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS embedder, bert_load('reranker', 'model/demo-reranker') AS reranker;

CREATE TEMP TABLE passages(id INTEGER PRIMARY KEY, body TEXT, embedding BLOB);
INSERT INTO passages(body) VALUES
  ('And God said, Let there be light: and there was light.'),
  ('The Lord is my shepherd; I shall not want.'),
  ('In the beginning was the Word, and the Word was with God.'),
  ('Blessed are the meek: for they shall inherit the earth.'),
  ('Call me Ishmael.'),
  ('There she blows! there she blows! A hump like a snow-hill! It is Moby Dick!'),
  ('The harpooneers stood ready in the bows of the whale-boats.'),
  ('Queequeg was a native of Kokovoko, an island far away to the West and South.'),
  ('The whale spouted once more and sounded into the deep.'),
  ('I recommend to the Congress a revision of the tariff laws.'),
  ('The state of the Union is strong.'),
  ('Our revenues for the fiscal year exceeded the estimates of the Treasury.'),
  ('We must balance the federal budget and reduce the national debt.'),
  ('The Army and the Navy have been kept in a state of readiness.'),
  ('A penny saved is a penny earned.'),
  ('You will be successful in your work this week.'),
  ('Never put off till tomorrow what you can do today.'),
  ('a domesticated carnivorous mammal that typically has a long snout'),
  ('a large body of salt water partly enclosed by land'),
  ('the act of sailing a boat across the water');
-- Embed every passage once, in packed batches.
UPDATE passages SET embedding = e.embedding
FROM bert_embed_each((SELECT json_group_object(id, body) FROM passages)) AS e
WHERE passages.id = CAST(e.key AS INTEGER);

-- The query is embedded once per statement; the 100 nearest passages go to
-- the cross-encoder as one JSON object (id -> text) and come back scored.
WITH nearest AS (
  SELECT id, body FROM passages
  ORDER BY bert_similarity(embedding, 'the sailors hunted the great white whale from their boats') DESC
  LIMIT 100
)
SELECT CAST(r.key AS INTEGER) AS id, round(r.score, 3) AS relevance, r.value AS passage
FROM bert_rerank_each('the sailors hunted the great white whale from their boats',
                      (SELECT json_group_object(id, body) FROM nearest), 'reranker') AS r
ORDER BY r.score DESC
LIMIT 10;
