-- Needs the test models that `make examples` (or `make test`) generates in build/models/.
-- Extractive question answering: ask one question of every row.
-- Any BertForQuestionAnswering checkpoint works (for real answers:
-- distilbert-base-cased-distilled-squad or deepset/bert-base-cased-squad2).
-- This example runs on the random-weight test model that `make test` builds,
-- so its answers are meaningless; the SQL is what matters.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('qa', 'build/models/qa-f32') AS model;

CREATE TABLE contracts(id INTEGER PRIMARY KEY, body TEXT);
INSERT INTO contracts(body) VALUES
  ('This agreement is signed by Acme Corporation and Globex Inc. on 3 March 2024 in Geneva.'),
  ('The lease between Jane Doe and the City of Lyon runs for five years from 1 July 2023.'),
  ('Initech Ltd. signed the supply contract with Umbrella Corp. in Zürich.');

-- The best answer per row: the answer is always a substring of the context,
-- at character offsets start .. end.
SELECT id,
       json_extract(a, '$.answer') AS answer,
       round(json_extract(a, '$.score'), 3) AS score,
       json_extract(a, '$.start') AS start,
       json_extract(a, '$.end') AS "end"
FROM (SELECT id, bert_answer('Who signed the contract?', body, 'qa') AS a FROM contracts);

-- The three best answers of one context, as rows.
SELECT rank, answer, round(score, 3) AS score, start, "end"
FROM bert_answer_each('Where was it signed?', (SELECT body FROM contracts WHERE id = 1), 3, 'qa');
