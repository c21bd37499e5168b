'use strict';
// sqlite-bert for Node.js: the extension ships prebuilt for the platform the
// package was packed on (prebuilt/<platform>-<arch>/bert.so or bert.dylib),
// with the project's demo model (demo-model/), which load() registers.
const fs = require('fs');
const path = require('path');

const SUFFIX = process.platform === 'darwin' ? '.dylib' : '.so';

// The path without its suffix, the form SQLite's load_extension takes; the
// entry point sqlite3_bert_init follows from the name "bert".
function getLoadablePath() {
  const dir = path.join(__dirname, 'prebuilt', `${process.platform}-${process.arch}`);
  const file = path.join(dir, 'bert' + SUFFIX);
  if (!fs.existsSync(file)) {
    const have = fs.existsSync(path.join(__dirname, 'prebuilt'))
      ? fs.readdirSync(path.join(__dirname, 'prebuilt')).join(', ') : 'none';
    throw new Error(`sqlite-bert: no prebuilt extension for ${process.platform}-${process.arch} ` +
      `(this package has: ${have}); build bert${SUFFIX} from the sources with make and load it by its path`);
  }
  return path.join(dir, 'bert');
}

// The name load() registers the demo model under.  Not 'default': a user's
// own bert_load('default', ...) must still work afterwards, and then takes
// precedence (a call that names no model uses the model named 'default',
// else the only one registered).
const BUNDLED_MODEL = 'default';

// The directory of the demo model the package carries (a small BERT, 6
// layers x 256, sentence-transformers mean pooling): bert_load's path.
function getDemoModelPath() {
  return path.join(__dirname, 'demo-model');
}

// Registers the demo model unless the connection already has a model.
function registerDemoModel(db) {
  if (db.prepare('SELECT count(*) AS n FROM bert_models').get().n !== 0) return;
  const dir = getDemoModelPath();
  if (!fs.existsSync(path.join(dir, 'config.json'))) {
    throw new Error(`sqlite-bert: the demo model (${dir}) is missing; reinstall the package, ` +
      'or call load(db, { defaultModel: false })');
  }
  db.prepare('SELECT bert_load(?, ?)').get(BUNDLED_MODEL, dir);
}

// Loads the extension into a better-sqlite3 Database, or a node:sqlite
// DatabaseSync opened with { allowExtension: true } (Node >= 22.5).  Unless
// options.defaultModel is false or the connection already has a model, it
// also registers the demo model as 'default', so that calls naming no model
// work at once; to make a model of your own the default, load with
// { defaultModel: false }, or SELECT bert_unload('default') first.
function load(db, options = {}) {
  const defaultModel = !options || options.defaultModel !== false;
  if (!db || typeof db.loadExtension !== 'function') {
    throw new TypeError('sqlite-bert: load(db) takes a better-sqlite3 Database or a node:sqlite DatabaseSync');
  }
  if (typeof db.enableLoadExtension === 'function') {
    // node:sqlite: refused unless the database was opened with allowExtension.
    try {
      db.enableLoadExtension(true);
    } catch (err) {
      throw new Error('sqlite-bert: this node:sqlite database cannot load extensions; open it with ' +
        `new DatabaseSync(path, { allowExtension: true }) (${err.message})`);
    }
    try {
      db.loadExtension(getLoadablePath());
    } finally {
      db.enableLoadExtension(false);
    }
  } else {
    db.loadExtension(getLoadablePath());
  }
  if (defaultModel) registerDemoModel(db);
}

module.exports = { getLoadablePath, getDemoModelPath, load, BUNDLED_MODEL };
