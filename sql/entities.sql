-- Needs the test models that `make examples` (or `make test`) generates in build/models/.
-- Named entities: extract them from a table of documents into another table.
-- Any BertForTokenClassification checkpoint works (for real names, places
-- and organisations: dslim/bert-base-NER or dbmdz/bert-large-cased-finetuned-conll03-english).
-- This example runs on the random-weight test model that `make test` builds,
-- so its entities are meaningless; the SQL is what matters.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('ner', 'build/models/ner-conll-f32', '{"aggregation": "simple"}') AS model;

CREATE TABLE docs(id INTEGER PRIMARY KEY, body TEXT);
INSERT INTO docs(body) VALUES
  ('Angela Merkel met Emmanuel Macron at the Élysée Palace in Paris.'),
  ('José Martínez flew from São Paulo to Zürich on Tuesday.'),
  ('Björk performed in Reykjavík with the Sugarcubes.');

-- One row per entity; start and end are character offsets into the body,
-- so substr(body, start + 1, end - start) is the entity as written.
CREATE TABLE entities AS
SELECT docs.id AS doc_id, e.entity, e.word, round(e.score, 3) AS score, e.start, e."end",
       substr(docs.body, e.start + 1, e."end" - e.start) AS span
FROM docs, bert_ner_each(docs.body, 'ner') AS e;

SELECT * FROM entities ORDER BY doc_id, start LIMIT 12;

-- The same as JSON, in the token-classification pipeline's shape.
SELECT bert_ner('Angela Merkel met Emmanuel Macron in Paris.', 'ner') AS entities;

-- Every word piece with its own label: register the model with "aggregation": "none".
SELECT bert_load('ner-tokens', 'build/models/ner-conll-f32', '{"aggregation": "none"}') AS model;
SELECT "index", entity, word, start, "end" FROM bert_ner_each('Angela Merkel met Emmanuel Macron in Paris.', 'ner-tokens');
