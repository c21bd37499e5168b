/** The extension's path without its suffix (.so, .dylib), as SQLite's load_extension takes it. */
export function getLoadablePath(): string;
/** Loads the extension into a better-sqlite3 Database or a node:sqlite DatabaseSync
 *  (opened with { allowExtension: true }). */
export function load(db: { loadExtension(path: string): unknown }): void;
