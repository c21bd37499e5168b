-- Attention: which word a BERT head looks at, for the sentence BERT papers
-- discuss, "The animal didn't cross the street because it was too tired."
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model;

CREATE TEMP TABLE sentence(text TEXT);
INSERT INTO sentence VALUES ('The animal didn''t cross the street because it was too tired.');

-- The model reads word pieces; people read words.  Here a word is a run of
-- the text between spaces ("didn't" is the pieces didn ' t, "tired." is tired
-- and .), and [CLS] and [SEP] are words of their own.  A piece belongs to the
-- word its first character is in: the spaces before it count the words.
CREATE TEMP TABLE pieces AS
SELECT o."index" AS position,
       CASE WHEN o.word IS NULL THEN (CASE o."index" WHEN 0 THEN -1 ELSE 1000 END)
            ELSE length(substr(s.text, 1, o.start)) - length(replace(substr(s.text, 1, o.start), ' ', ''))
       END AS word,
       o.token, o.start, o."end"
FROM sentence AS s, bert_tokenize_offsets(s.text) AS o;

CREATE TEMP TABLE words AS
SELECT p.word, CASE WHEN p.word IN (-1, 1000) THEN min(p.token)
                    ELSE substr(s.text, min(p.start) + 1, max(p."end") - min(p.start)) END AS text
FROM pieces AS p, sentence AS s GROUP BY p.word;

-- Every layer's and head's attention between pieces, then between words, by
-- the usual rule: attention FROM a word is the mean of its pieces' rows, and
-- attention TO a word the sum of its pieces' columns, so that each word's row
-- still sums to 1.
CREATE TEMP TABLE word_attention AS
SELECT a.layer, a.head, f.word AS from_word, t.word AS to_word,
       sum(a.weight) / count(DISTINCT a.from_position) AS weight
FROM sentence AS s, bert_attention(s.text) AS a
JOIN pieces AS f ON f.position = a.from_position
JOIN pieces AS t ON t.position = a.to_position
GROUP BY a.layer, a.head, f.word, t.word;

-- The head in which "it" looks most at "animal" (this is a small demo model:
-- a large one has heads that resolve the pronoun; here it is whichever does most).
CREATE TEMP TABLE chosen AS
SELECT w.layer, w.head, round(w.weight, 3) AS it_to_animal
FROM word_attention AS w
JOIN words AS f ON f.word = w.from_word AND f.text = 'it'
JOIN words AS t ON t.word = w.to_word AND t.text = 'animal'
ORDER BY w.weight DESC LIMIT 1;
SELECT * FROM chosen;

-- That head's table: a row for each word attending, a column for each word
-- attended to, in percent (group_concat over a window keeps the columns in
-- order).
.mode list
.headers off
SELECT DISTINCT printf('%-9s', 'from \ to') || group_concat(printf('%8.8s', text), '')
       OVER (ORDER BY word ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
FROM words;
SELECT line FROM (
  SELECT DISTINCT w.from_word,
         printf('%-9.9s', f.text) || group_concat(printf('%8d', cast(round(100 * w.weight) AS INTEGER)), '')
         OVER (PARTITION BY w.from_word ORDER BY w.to_word
               ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING) AS line
  FROM word_attention AS w
  JOIN chosen AS c ON w.layer = c.layer AND w.head = c.head
  JOIN words AS f ON f.word = w.from_word)
ORDER BY from_word;

-- Where "it" looks in that head, heaviest first.
.mode box
.headers on
SELECT t.text AS word, round(w.weight, 3) AS weight, substr('##########', 1, cast(round(10 * w.weight) AS INTEGER)) AS bar
FROM word_attention AS w
JOIN chosen AS c ON w.layer = c.layer AND w.head = c.head
JOIN words AS f ON f.word = w.from_word AND f.text = 'it'
JOIN words AS t ON t.word = w.to_word
ORDER BY w.weight DESC;

-- A layer's hidden states are vectors too: how alike "it" and "animal" are,
-- layer by layer (layer 0 is the embeddings).
SELECT a.layer, round(bert_similarity(a.vector, b.vector), 3) AS it_vs_animal
FROM sentence AS s, bert_hidden_states(s.text) AS a
JOIN bert_hidden_states(s.text) AS b ON b.layer = a.layer
WHERE a.token = 'it' AND b.token = 'animal'
ORDER BY a.layer;
