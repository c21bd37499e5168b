-- Tokenization: the WordPiece pieces and ids a BERT model sees.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model;

SELECT bert_tokenize('Unaffable naïveté: 野口里佳 [MASK]!') AS tokens;
SELECT bert_token_ids('Unaffable naïveté: 野口里佳 [MASK]!') AS ids;

-- One row per token, with its position, using SQLite's json_each.
SELECT key AS position, value AS token
FROM json_each(bert_tokenize('Tokenizers split words into pieces.'));

-- Count tokens per row of a table (e.g. to find texts longer than max_length).
CREATE TEMP TABLE docs(body TEXT);
INSERT INTO docs VALUES ('short text'), ('a somewhat longer text with more words in it');
SELECT body, json_array_length(bert_token_ids(body)) AS n_tokens FROM docs;
