-- Fine-tuning in SQL: teach the demo model five banking intents from BANKING77
-- (../shared/data/everyday-english/banking77, CC BY 4.0), then classify the
-- held-out test queries with bert_label and print the accuracy.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model;

.import --csv ../shared/data/everyday-english/banking77/train.csv banking_train
.import --csv ../shared/data/everyday-english/banking77/test.csv banking_test

-- Five intents, 32 training queries and 16 test queries of each.
CREATE TEMP TABLE intents(category TEXT PRIMARY KEY);
INSERT INTO intents VALUES ('card_arrival'), ('exchange_rate'), ('lost_or_stolen_card'), ('top_up_failed'),
                           ('pin_blocked');
CREATE TEMP VIEW train AS
  SELECT text, category FROM (SELECT text, category, row_number() OVER (PARTITION BY category ORDER BY rowid) AS n
                              FROM banking_train WHERE category IN intents) WHERE n <= 32;
CREATE TEMP VIEW test AS
  SELECT text, category FROM (SELECT text, category, row_number() OVER (PARTITION BY category ORDER BY rowid) AS n
                              FROM banking_test WHERE category IN intents) WHERE n <= 16;

-- A row every 10 steps (logging_steps) as it trains; the last one is the saved model, with the
-- metrics of the test queries.
SELECT step, round(epoch, 2) AS epoch, round(loss, 4) AS loss, eval, saved
FROM bert_train('build/intents-model', 'default', 'SELECT text, category FROM train',
                '{"epochs": 2, "batch_size": 16, "learning_rate": 3e-4, "overwrite": true,
                  "eval_query": "SELECT text, category FROM test"}');

SELECT bert_load('intents', 'build/intents-model') AS model;
SELECT text, category, bert_label(text, 'intents') AS predicted FROM test LIMIT 5;
SELECT round(avg(bert_label(text, 'intents') = category), 3) AS accuracy FROM test;
