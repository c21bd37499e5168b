-- Fill-mask: BERT's own pre-training task.
.bail on
.load ./bert
.headers on
.mode box
SELECT bert_load('default', 'model/demo') AS model;

-- JSON in the Hugging Face pipeline's shape.
SELECT bert_fill_mask('The sun rises in the [MASK].', 3) AS candidates;

-- The same as rows.
SELECT rank, token, token_str, round(score, 4) AS score
FROM bert_fill_mask_each('I drink a cup of [MASK] every morning.', 5);

-- Several masks: one list of candidates per mask, left to right.
SELECT mask_index, rank, token_str, round(score, 4) AS score
FROM bert_fill_mask_each('The [MASK] is on the [MASK].', 3);
