'use strict';
// sqlite-bert for Node.js: the extension ships prebuilt for the platform the
// package was packed on (prebuilt/<platform>-<arch>/bert.so or bert.dylib).
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

// Loads the extension into a better-sqlite3 Database, or a node:sqlite
// DatabaseSync opened with { allowExtension: true } (Node >= 22.5).
function load(db) {
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
    return;
  }
  db.loadExtension(getLoadablePath());
}

module.exports = { getLoadablePath, load };
