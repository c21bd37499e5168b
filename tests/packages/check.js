'use strict';
// check.js MODEL_DIR DRIVER - what a user of the installed npm package does,
// with DRIVER "better-sqlite3" or "node:sqlite" (Node >= 22.5): prints
// `DRIVER: version|similarity`.
const bert = require('sqlite-bert');
const [model, driver] = process.argv.slice(2);
const SQL = "SELECT bert_version() AS v, bert_load('default', ?) AS m, " +
            "bert_similarity('a dog barked', 'the puppy was noisy') AS s";

function open() {
  if (driver === 'better-sqlite3') {
    const Database = require('better-sqlite3');
    return new Database(':memory:');
  }
  if (driver === 'node:sqlite') {
    const { DatabaseSync } = require('node:sqlite');
    // Without allowExtension, load() must refuse with a message that says so.
    let refused = '';
    try {
      bert.load(new DatabaseSync(':memory:'));
    } catch (err) {
      refused = err.message;
    }
    if (!refused.includes('allowExtension')) throw new Error(`node:sqlite: not refused clearly (${refused})`);
    return new DatabaseSync(':memory:', { allowExtension: true });
  }
  throw new Error(`usage: check.js MODEL_DIR better-sqlite3|node:sqlite (got ${driver})`);
}

const db = open();
bert.load(db);
const row = db.prepare(SQL).get(model);
if (row.m !== 'default') throw new Error(`${driver}: bert_load returned ${row.m}`);
console.log(`${driver}: ${row.v}|${row.s.toFixed(6)}`);
