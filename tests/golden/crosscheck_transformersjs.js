// crosscheck_transformersjs.js - transformers.js's `text-classification`
// pipeline on local ONNX exports, for crosscheck_transformersjs.py.
//
//   node crosscheck_transformersjs.js MODELS_ROOT < requests.json > answers.json
//
// requests: [{"model": dir name under MODELS_ROOT, "text": text}, ...]
// answers:  [[{"label", "score"}, ...] for each request]: every label (top_k
//           null), best first, as the pipeline returns them.
//
// Nothing is fetched (transformersjs_local.js says what the model
// directories hold and what to install).
'use strict';

require('./transformersjs_local.js').serve('crosscheck_transformersjs.js',
    (r) => ['text-classification', r.model],
    (pipe, r) => pipe(r.text, { top_k: null }));
