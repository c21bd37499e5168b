'use strict';
// check.js MODEL_DIR - what a user of the installed npm package does, with
// better-sqlite3 and, where Node has it (>= 22.5), node:sqlite: prints
// `version|similarity` per driver.
const bert = require('sqlite-bert');
const model = process.argv[2];
const SQL = "SELECT bert_version() AS v, bert_load('default', ?) AS m, " +
            "bert_similarity('a dog barked', 'the puppy was noisy') AS s";

function report(driver, row) {
  if (row.m !== 'default') throw new Error(`${driver}: bert_load returned ${row.m}`);
  console.log(`${driver}: ${row.v}|${row.s.toFixed(6)}`);
}

const Database = require('better-sqlite3');
const db = new Database(':memory:');
bert.load(db);
report('better-sqlite3', db.prepare(SQL).get(model));

let nodeSqlite = null;
try {
  nodeSqlite = require('node:sqlite');
} catch (err) {
  console.log(`node:sqlite: not in Node ${process.version} (it needs >= 22.5), not tested`);
}
if (nodeSqlite) {
  const db2 = new nodeSqlite.DatabaseSync(':memory:', { allowExtension: true });
  bert.load(db2);
  report('node:sqlite', db2.prepare(SQL).get(model));
}
