-- The sixth stage's embedding step, in SQL: bert_train's "embed" task
-- (in-batch negatives, cosine x 20, as sentence-transformers'
-- MultipleNegativesRankingLoss) on the rows model/prep_embed_rows.py wrote,
-- from the masked-LM step's weights (exported to model/work/stage6-mlm).
-- Run from the project root after `make`:
--
--   sqlite3 model/work/embed.db < model/embed_stage.sql
--
-- Writes model/work/stage6-embed (the encoder alone, sentence-transformers
-- layout); model/graft.py puts it back under the masked-LM and
-- next-sentence heads.
.load ./bert
.mode box
.timer on
SELECT step, epoch, round(loss, 4) AS loss, learning_rate, round(examples_per_s, 1) AS examples_per_s,
       eval, saved
FROM bert_train('model/work/stage6-embed', 'model/work/stage6-mlm',
                'SELECT anchor, positive FROM embed_rows ORDER BY rowid',
                json_object('task', 'embed', 'batch_size', 128, 'learning_rate', 1e-4,
                            'warmup_ratio', 0.1, 'epochs', 1, 'max_length', 40,
                            'shuffle', json('false'), 'seed', 6060, 'logging_steps', 20,
                            'eval_query', 'SELECT anchor, positive FROM eval_rows',
                            'overwrite', json('true')));
