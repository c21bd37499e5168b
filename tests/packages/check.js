'use strict';
// check.js MODEL_DIR DRIVER - what a user of the installed npm package does,
// with DRIVER "better-sqlite3" or "node:sqlite" (Node >= 22.5): load(db)
// registers the bundled demo model; the user's own bert_load('default',
// MODEL_DIR) afterwards works and takes over the calls that name no model;
// load(db, { defaultModel: false }) registers none.  Prints
// `DRIVER: version|similarity` of the user's model.
const fs = require('fs');
const bert = require('sqlite-bert');
const [model, driver] = process.argv.slice(2);
const SQL = "SELECT bert_version() AS v, bert_load('default', ?) AS m, " +
            "bert_similarity('a dog barked', 'the puppy was noisy') AS s";

function check(ok, what) {
  if (!ok) throw new Error(`${driver}: ${what}`);
}

function open() {
  if (driver === 'better-sqlite3') {
    const Database = require('better-sqlite3');
    return new Database(':memory:');
  }
  if (driver === 'node:sqlite') {
    const { DatabaseSync } = require('node:sqlite');
    return new DatabaseSync(':memory:', { allowExtension: true });
  }
  throw new Error(`usage: check.js MODEL_DIR better-sqlite3|node:sqlite (got ${driver})`);
}

if (driver === 'node:sqlite') {
  // Without allowExtension, load() must refuse with a message that says so.
  const { DatabaseSync } = require('node:sqlite');
  let refused = '';
  try {
    bert.load(new DatabaseSync(':memory:'));
  } catch (err) {
    refused = err.message;
  }
  check(refused.includes('allowExtension'), `not refused clearly (${refused})`);
}

let db = open();
bert.load(db);
const models = db.prepare('SELECT name, path FROM bert_models').all();
check(models.length === 1 && models[0].name === 'default' && bert.BUNDLED_MODEL === 'default',
      `load(db) registered ${JSON.stringify(models)}`);
check(fs.realpathSync(models[0].path) === fs.realpathSync(bert.getDemoModelPath()),
      `bundled model at ${models[0].path}, getDemoModelPath() ${bert.getDemoModelPath()}`);
// A model of the user's own takes the name over once the demo model is unloaded.
check(Number(db.prepare("SELECT bert_unload('default') AS n").get().n) === 1, 'bert_unload of the demo model');
const row = db.prepare(SQL).get(model);
check(row.m === 'default', `bert_load returned ${row.m}`);
const own = db.prepare('SELECT path, encoder_calls AS n FROM bert_models').all();
check(own.length === 1 && Number(own[0].n) > 0 &&
      fs.realpathSync(own[0].path) !== fs.realpathSync(bert.getDemoModelPath()),
      `after bert_load('default', own): ${JSON.stringify(own)}`);

db = open();
bert.load(db, { defaultModel: false });
check(Number(db.prepare('SELECT count(*) AS n FROM bert_models').get().n) === 0, 'defaultModel: false registered a model');
let error = '';
try {
  db.prepare("SELECT bert_embed('hello') AS e").get();
} catch (err) {
  error = err.message;
}
check(error.includes('no model is registered'), `defaultModel: false: bert_embed gave '${error}'`);

console.log(`${driver}: ${row.v}|${row.s.toFixed(6)}`);
