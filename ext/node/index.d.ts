/** The extension's path without its suffix (.so, .dylib), as SQLite's load_extension takes it. */
export function getLoadablePath(): string;
/** The directory of the demo model the package carries, as bert_load takes it. */
export function getDemoModelPath(): string;
/** The name load() registers the demo model under: "default". */
export const BUNDLED_MODEL: string;
export interface LoadOptions {
  /** Register the demo model as "default" when the connection has no model yet (default true). */
  defaultModel?: boolean;
}
/** Loads the extension into a better-sqlite3 Database or a node:sqlite DatabaseSync
 *  (opened with { allowExtension: true }), then registers the demo model unless
 *  options.defaultModel is false or the connection already has a model. */
export function load(db: { loadExtension(path: string): unknown }, options?: LoadOptions): void;
