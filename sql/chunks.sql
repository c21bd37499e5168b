-- Long texts: character offsets of word pieces, and documents cut into
-- chunks that fit the model, each chunk with its place in the document.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model;

-- Every word piece with the characters of the original text it came from:
-- substr(text, start + 1, end - start) is its source, through lowercasing,
-- accent stripping and CJK spacing.  [CLS] and [SEP] are at (0, 0).
SELECT "index", token, start, "end", word,
       substr('Crème brûlée at Café Zoë, 東京!', start + 1, "end" - start) AS source
FROM bert_tokenize_offsets('Crème brûlée at Café Zoë, 東京!');

-- A table of documents longer than the model reads at once.
CREATE TEMP TABLE documents(id INTEGER PRIMARY KEY, title TEXT, body TEXT);
INSERT INTO documents(title, body) VALUES
  ('Bread', 'Bread is a staple food prepared from a dough of flour and water, usually by baking. '
            || 'Throughout recorded history it has been popular around the world. '
            || 'Yeast makes the dough rise: it ferments sugars and releases carbon dioxide, '
            || 'which leaves bubbles in the loaf. Sourdough uses wild yeast and lactic acid bacteria.'),
  ('Rivers', 'A river is a natural flowing watercourse, usually freshwater, flowing towards an ocean, '
             || 'a sea, a lake or another river. Rivers carry sediment downstream and shape valleys. '
             || 'Large rivers such as the Amazon and the Nile drain huge basins.');

-- Chunks of at most 24 word pieces, consecutive ones sharing up to 6, cut
-- between words; start/end locate each chunk in its document.
SELECT d.title, c.chunk_index, c.tokens, c.start, c."end", c.text
FROM documents AS d, bert_chunks(d.body, 24, 6) AS c
ORDER BY d.id, c.chunk_index;

-- The chunk text is the document's own substring.
SELECT count(*) AS chunks,
       sum(c.text = substr(d.body, c.start + 1, c."end" - c.start)) AS exact_substrings
FROM documents AS d, bert_chunks(d.body, 24, 6) AS c;

-- Document search: embed every chunk, rank chunks against a query, and let
-- each document's best chunk speak for it.
CREATE TEMP TABLE chunks AS
  SELECT d.id AS doc, c.chunk_index, c.start, c."end", c.text, bert_embed(c.text) AS embedding
  FROM documents AS d, bert_chunks(d.body, 24, 6) AS c;
SELECT d.title, max(bert_similarity(ch.embedding, 'How does yeast make bread rise?')) AS best,
       (SELECT text FROM chunks WHERE doc = d.id
        ORDER BY bert_similarity(embedding, 'How does yeast make bread rise?') DESC LIMIT 1) AS best_chunk
FROM documents AS d JOIN chunks AS ch ON ch.doc = d.id
GROUP BY d.id ORDER BY best DESC;
