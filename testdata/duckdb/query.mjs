// Summarizes a Hone trajectory Parquet file with DuckDB and prints JSON, so
// format/trajectory's test can compare DuckDB's reading of our files with
// its own Stats.
//
//   node testdata/duckdb/query.mjs FILE.parquet            # the summary below
//   node testdata/duckdb/query.mjs FILE.parquet "SQL"      # any query; the file is the view `t`
import { DuckDBInstance } from '@duckdb/node-api';

const [file, sql] = process.argv.slice(2);
if (!file) {
  console.error('usage: node query.mjs FILE.parquet [SQL]');
  process.exit(2);
}

const db = await DuckDBInstance.create(':memory:');
const conn = await db.connect();
const quoted = "'" + file.replaceAll("'", "''") + "'";
await conn.run(`CREATE VIEW t AS SELECT * FROM read_parquet(${quoted})`);

async function rows(q) {
  const reader = await conn.runAndReadAll(q);
  return reader.getRowObjectsJson();
}

// Tokens: sampled token ids over every message of every history (the main
// one and the additional ones) of every trajectory.
const summary = `count(*) AS trajectories, count(DISTINCT group_id) AS groups,
  count(reward) AS scored, avg(reward) AS reward_mean, stddev_samp(reward) AS reward_std,
  min(reward) AS reward_min, max(reward) AS reward_max,
  count(*) FILTER (WHERE error <> '') AS errors,
  coalesce(sum(coalesce(list_sum(list_transform(messages, m -> len(m.token_ids))), 0)
    + coalesce(list_sum(list_transform(additional_histories,
        h -> coalesce(list_sum(list_transform(h.messages, m -> len(m.token_ids))), 0))), 0)), 0) AS tokens`;

// What served the rows, adapter and step, ordered by run: the part of a
// served name "<run>@<N>" before the "@" (a run name, then a plain
// number), or the whole name otherwise (a base model's, or ""); then by
// the N of such a name, or the rows' step otherwise; then by the rows' step.
const servedName = `(regexp_full_match(adapter, '[A-Za-z0-9][A-Za-z0-9._-]{0,127}@(0|[1-9][0-9]*)')
    AND NOT contains(adapter, '..'))`;
const byRun = `CASE WHEN ${servedName} THEN split_part(adapter, '@', 1) ELSE adapter END`;
const byServedStep = `CASE WHEN ${servedName} THEN CAST(split_part(adapter, '@', 2) AS BIGINT) ELSE step END`;

let out;
if (sql) {
  out = await rows(sql);
} else {
  out = {
    total: (await rows(`SELECT ${summary} FROM t`))[0],
    by_step: await rows(`SELECT step, ${summary} FROM t GROUP BY step ORDER BY step`),
    by_adapter: await rows(
      `SELECT adapter, step, ${summary} FROM t GROUP BY adapter, step ORDER BY ${byRun}, ${byServedStep}, step, adapter`),
    by_env: await rows(`SELECT env, ${summary} FROM t GROUP BY env ORDER BY env`),
    schema_version: (await rows(
      `SELECT decode(value) AS v FROM parquet_kv_metadata(${quoted}) WHERE decode(key) = 'hone.schema_version'`))[0]?.v ?? null,
  };
}
console.log(JSON.stringify(out));
conn.closeSync?.();
