// crosscheck_ner_qa_transformersjs.js - transformers.js's `token-classification`
// (no aggregation) and `question-answering` pipelines on local ONNX exports,
// for crosscheck_ner_qa_transformersjs.py.
//
//   node crosscheck_ner_qa_transformersjs.js MODELS_ROOT < requests.json > answers.json
//
// requests: [{"task": "ner", "model", "text"} or {"task": "qa", "model", "question", "context"}]
// answers:  for "ner" the pipeline's [{"entity", "score", "index", "word"}];
//           for "qa" its top-1 {"answer", "score"}.
//
// Nothing is fetched (transformersjs_local.js says what the model
// directories hold and what to install).
'use strict';

require('./transformersjs_local.js').serve('crosscheck_ner_qa_transformersjs.js',
    (r) => [r.task === 'ner' ? 'token-classification' : 'question-answering', r.model],
    (pipe, r) => (r.task === 'ner' ? pipe(r.text) : pipe(r.question, r.context)));
