-- sqlite-bert demo: run from the project root with `make demo`
-- or `sqlite3 < sql/demo.sql`.
.bail on
.load ./bert
.headers on
.mode box

-- The project's small demo model (model/demo); any Hugging Face BERT
-- directory works the same way.
SELECT bert_load('default', 'model/demo') AS model;
SELECT name, hidden_size, num_layers, vocab_size, max_length, pooling FROM bert_models;

-- 1. Tokenize: exactly Hugging Face's WordPiece.
SELECT bert_tokenize('The quick brown fox jumps over the lazy dog.') AS tokens;

-- 2. Embed: a float32 BLOB, one number per hidden unit.
SELECT length(bert_embed('hello world')) AS bytes,
       substr(bert_vector_to_json(bert_embed('hello world')), 1, 60) || '...' AS first_values;

-- 3. Semantic ranking over a small table.
CREATE TEMP TABLE sentences(body TEXT);
INSERT INTO sentences VALUES
  ('The cat sat on the mat.'),
  ('A kitten was sleeping on the rug.'),
  ('The stock market fell sharply today.'),
  ('Investors sold their shares after the news.'),
  ('He baked bread in the morning.'),
  ('She made a cake for the party.');
SELECT body, round(bert_similarity(body, 'a cat resting on a carpet'), 3) AS similarity
FROM sentences ORDER BY similarity DESC;

-- 4. Fill the mask.
SELECT rank, token_str, round(score, 4) AS score, sequence
FROM bert_fill_mask_each('She put the cup [MASK] the table.', 5);
SELECT rank, token_str, round(score, 4) AS score
FROM bert_fill_mask_each('The [MASK] was barking at the cat.', 5);

-- 5. Classify: a fine-tuned head (model/demo-source tells which public-domain
-- source a sentence comes from), scored as Hugging Face's text-classification
-- pipeline scores it.
SELECT bert_load('source', 'model/demo-source') AS classifier;
SELECT column1 AS sentence, bert_label(column1, 'source') AS source FROM (VALUES
  ('Call me Ishmael.'),
  ('And the LORD spake unto Moses, saying, Speak unto the children of Israel.'),
  ('I urge the Congress to pass this bill without delay.'),
  ('You will meet a tall dark stranger.'));
SELECT key + 1 AS rank, value ->> 'label' AS label, round(value ->> 'score', 3) AS score
FROM json_each(bert_classify('The whale breached beside the ship.', 'source'));

-- 6. Rerank: a cross-encoder reads both texts at once (model/demo-reranker:
-- how likely two sentences come from the same document).
SELECT bert_load('reranker', 'model/demo-reranker') AS cross_encoder;
SELECT round(score, 3) AS score, value AS candidate
FROM bert_rerank_each('I ask the Congress to reduce taxes and balance the budget.',
                      json_array('The revenues of the Treasury exceeded the estimates.',
                                 'And God said, Let there be light.',
                                 'A penny saved is a penny earned.'), 'reranker')
ORDER BY score DESC;
