-- Document search over long texts: cut each document into passages with
-- bert_chunks, index the passages with sqlite-vec, find the nearest
-- passages, and rank documents by their best passage.
-- Needs sqlite-vec's loadable extension: `make examples` (or `make sqlite-vec`) puts it at ./vec0.so.
--   sqlite3 < sql/document_search.sql
.bail on
.read sql/require_vec0.sql
.load ./vec0
.load ./bert
.headers on
.mode box
SELECT bert_load('demo', 'model/demo') AS model;

CREATE TEMP TABLE documents(id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT NOT NULL);
INSERT INTO documents(title, body) VALUES
  ('Baking', 'How to bake sourdough bread at home. Feed the starter the night before and ' ||
             'let the dough rise slowly in a cool kitchen. The best bread flour gives a crisp ' ||
             'crust. Bake it hot, with steam for the first twenty minutes, then let it cool ' ||
             'on a rack before you cut it.'),
  ('Rome',   'The history of the Roman empire begins with a small city on seven hills. Its ' ||
             'legions carried roads, laws and the Latin language across Europe. Emperors came ' ||
             'and went, some wise and some cruel. The fall of ancient Rome is still argued over ' ||
             'by historians today.'),
  ('Pets',   'Training a puppy to sit and stay takes patience and small treats. Dogs bark at ' ||
             'night when they hear noises outside. A new kitten needs soft food, fresh water and ' ||
             'a warm place to sleep. Take both to the vet in their first months.');

-- Passages of at most 24 word pieces, overlapping by 6, with their offsets
-- into the document ("end" is an SQL keyword: quote it).
CREATE TEMP TABLE chunks(id INTEGER PRIMARY KEY, doc_id INTEGER NOT NULL,
                         chunk_index INTEGER, start INTEGER, "end" INTEGER, text TEXT NOT NULL);
INSERT INTO chunks(doc_id, chunk_index, start, "end", text)
SELECT d.id, c.chunk_index, c.start, c."end", c.text
FROM documents AS d, bert_chunks(d.body, 24, 6) AS c;

SELECT doc_id, count(*) AS passages FROM chunks GROUP BY doc_id;

CREATE VIRTUAL TABLE temp.chunks_vec USING vec0(embedding float[256] distance_metric=cosine);
INSERT INTO chunks_vec(rowid, embedding)
SELECT CAST(key AS INTEGER), embedding
FROM bert_embed_each((SELECT json_group_object(id, text) FROM chunks));

-- Documents ranked by their best passage (k counts passages, not documents).
WITH hits AS (
  SELECT rowid AS chunk_id, distance FROM chunks_vec
  WHERE embedding MATCH bert_embed('ancient Rome') AND k = 20
), ranked AS (
  SELECT c.doc_id, c.text, c.start, h.distance,
         row_number() OVER (PARTITION BY c.doc_id ORDER BY h.distance) AS nth
  FROM hits AS h JOIN chunks AS c ON c.id = h.chunk_id
)
SELECT d.title, round(r.distance, 4) AS distance, r.start, r.text AS best_passage
FROM ranked AS r JOIN documents AS d ON d.id = r.doc_id
WHERE r.nth = 1
ORDER BY r.distance;

-- The same ranking without an index: the best passage of each document by
-- brute force (SQLite returns the text of the row that holds the max).
SELECT (SELECT title FROM documents WHERE id = doc_id) AS title,
       round(1 - max(bert_similarity(text, 'ancient Rome')), 4) AS distance, text AS best_passage
FROM chunks GROUP BY doc_id ORDER BY distance;
