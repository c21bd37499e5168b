// crosscheck_families_transformersjs.js - transformers.js's pipelines on local
// ONNX exports of the RoBERTa, XLM-RoBERTa and MPNet test models, for
// crosscheck_families_transformersjs.py.
//
//   node crosscheck_families_transformersjs.js MODELS_ROOT < requests.json > answers.json
//
// requests: [{"model": dir under MODELS_ROOT, "task": "feature-extraction" |
//            "fill-mask" | "text-classification" | "token-classification", "text": text}, ...]
// answers:  one per request, {"ids": transformers.js's token ids of the text,
//           "result": the mean-pooled, normalized embedding; the top 5
//           {"token", "score"} of the mask; every {"label", "score"}, best first;
//           every {"entity", "score", "index"} not labelled O}.
//
// Nothing is fetched (transformersjs_local.js says what the model
// directories hold and what to install).
'use strict';

require('./transformersjs_local.js').serve('crosscheck_families_transformersjs.js',
    (r) => [r.task, r.model],
    async (p, r) => {
        const ids = Array.from(p.tokenizer(r.text).input_ids.data, Number);
        let result;
        if (r.task === 'feature-extraction') {
            result = Array.from((await p(r.text, { pooling: 'mean', normalize: true })).data);
        } else if (r.task === 'fill-mask') {
            result = (await p(r.text, { top_k: 5 })).map((c) => ({ token: c.token, score: c.score }));
        } else if (r.task === 'token-classification') {
            result = (await p(r.text)).map((e) => ({ entity: e.entity, score: e.score, index: e.index }));
        } else {
            result = await p(r.text, { top_k: null });
        }
        return { ids, result };
    });
