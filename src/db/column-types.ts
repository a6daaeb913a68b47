/**
 * Column types shared by both dialects and every table file. Portable choices: ids made by the
 * app, timestamps as ISO 8601 text, booleans written as 1/0 (integer on SQLite, boolean on
 * PostgreSQL: read them with `Boolean(x)`), JSON as text on SQLite and jsonb on PostgreSQL (see
 * json.ts).
 */
export type DbBool = number | boolean;
/**
 * A JSON column as the driver returns it: text from SQLite, already parsed from PostgreSQL's jsonb.
 * Unknown until `fromDbJson` reads it; written as text (`toDbJson`).
 */
export type DbJson = unknown;
