// node-postgres (`pg`) against PostgreSQL 15 and against `rowdex serve`: one JSON line per step,
// in the same format as transcript.py (keys sorted, `", "` and `": "` separators, non-ASCII
// escaped as \uXXXX) so the runner compares this file's transcripts like the Python ones.
//
// node-postgres sends every parameter as text (Buffers in binary) through the extended protocol
// with an unnamed statement, or through the simple protocol when there are no parameters; it
// parses result columns by their type OID. The scenario covers:
//
//   * connect (Client), DDL, `result.command` / `result.rowCount` of each statement;
//   * queries with parameters of every column type rowdex supports (SMALLINT, INTEGER, BIGINT,
//     REAL, DOUBLE PRECISION, NUMERIC(p,s), TEXT, VARCHAR(n), BYTEA, BOOLEAN, DATE, TIMESTAMP)
//     and NULL, recording the JS values pg makes of them (int8 and numeric stay strings, dates and
//     timestamps become Date objects read in the process time zone, pinned to UTC below);
//   * a named prepared query (`{name, text, values}`) run twice, and a name reused for other text;
//   * rows as arrays (`rowMode: 'array'`), `result.fields` names and dataTypeID (built-in OIDs);
//   * BEGIN / ROLLBACK / COMMIT with checks, an aborted transaction (25P02, COMMIT answering
//     ROLLBACK), SAVEPOINT / ROLLBACK TO / RELEASE;
//   * errors and `err.code`: 23505, 23502, 42P01, 42703, 42601, 22012, 22003, 22P02;
//   * INSERT / UPDATE / DELETE / SELECT / RETURNING command tags and row counts;
//   * multi-statement simple queries (an array of results in pg 8), one failing half way (the
//     implicit transaction rolls the earlier statements back).
//
// Run: NODE_PATH=<node_modules holding pg> node node_pg_scenario.js --port P --user U --dbname D
//      --peer postgres|rowdex [--host H]

'use strict'

process.env.TZ = 'UTC' // pg reads DATE and TIMESTAMP as local time: make that deterministic

const { Client } = require('pg') // resolved through NODE_PATH

// --- command line -----------------------------------------------------------------------------

function parseArgs(argv) {
  const args = { host: '127.0.0.1' }
  for (let i = 0; i < argv.length; i++) {
    const match = /^--([a-z]+)(?:=(.*))?$/.exec(argv[i])
    if (!match) throw new Error(`unexpected argument ${argv[i]}`)
    args[match[1]] = match[2] !== undefined ? match[2] : argv[++i]
  }
  for (const required of ['port', 'user', 'dbname', 'peer']) {
    if (args[required] === undefined) throw new Error(`--${required} is required`)
  }
  if (!['postgres', 'rowdex'].includes(args.peer)) throw new Error('--peer: postgres or rowdex')
  args.port = Number(args.port)
  return args
}

// --- transcript (the JSON of transcript.py) ---------------------------------------------------

function jsonString(s) {
  // Python's json.dumps escapes every non-ASCII character (ensure_ascii).
  return JSON.stringify(s).replace(
    /[\u0080-\uffff]/g,
    (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'),
  )
}

function dumps(value) {
  if (value === null || value === undefined) return 'null'
  if (typeof value === 'string') return jsonString(value)
  if (Array.isArray(value)) return '[' + value.map(dumps).join(', ') + ']'
  if (typeof value === 'object') {
    const keys = Object.keys(value).sort()
    return '{' + keys.map((k) => jsonString(k) + ': ' + dumps(value[k])).join(', ') + '}'
  }
  return JSON.stringify(value)
}

function normalise(value) {
  if (value === null || value === undefined) return null
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'NaN'
    if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity'
    return value
  }
  if (typeof value === 'bigint') return value.toString()
  if (typeof value === 'string' || typeof value === 'boolean') return value
  if (value instanceof Date) {
    return { datetime: Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString() }
  }
  if (Buffer.isBuffer(value)) return { bytes: value.toString('base64') }
  if (Array.isArray(value)) return value.map(normalise)
  if (typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) out[k] = normalise(v)
    return out
  }
  return { repr: typeof value }
}

class Transcript {
  constructor(peer) {
    this.peer = peer
    this.failures = 0
  }

  record(name, fields) {
    process.stdout.write(dumps({ step: name, ...fields }) + '\n')
  }

  // Runs `fn` (sync or async), records its value or its error's SQLSTATE (or class), and
  // returns the value (undefined on error).
  async step(name, fn) {
    let value
    try {
      value = await fn()
    } catch (error) {
      process.stderr.write(`[${this.peer}] ${name}: ${error && error.message}\n`)
      const code = error && typeof error.code === 'string' && error.code ? error.code : null
      this.record(name, { error: code || (error && error.constructor && error.constructor.name) || 'Error' })
      return undefined
    }
    this.record(name, { value: normalise(value) })
    return value
  }

  // A fact the scenario asserts on its own (true on both peers, or the run fails).
  check(name, condition, detail = '') {
    if (!condition) {
      this.failures += 1
      process.stderr.write(`[${this.peer}] check failed: ${name} ${detail}\n`)
    }
    this.record(name, { check: Boolean(condition) })
  }
}

// --- what results become in the transcript ----------------------------------------------------

const tagOf = (result) => ({ command: result.command, rowCount: result.rowCount })
const fieldsOf = (result) => result.fields.map((f) => ({ name: f.name, dataTypeID: f.dataTypeID }))
const withTypes = (value) => ({ js: value === null ? 'null' : typeof value, v: value })

// --- the scenario -----------------------------------------------------------------------------

const CREATE_ITEMS = `
CREATE TABLE npg_items (
    id INTEGER PRIMARY KEY,
    sm SMALLINT,
    bi BIGINT,
    re REAL,
    dp DOUBLE PRECISION,
    nu NUMERIC(10,2),
    tx TEXT NOT NULL,
    vc VARCHAR(20),
    by BYTEA,
    bo BOOLEAN,
    da DATE,
    ts TIMESTAMP
)`

const INSERT_ITEM =
  'INSERT INTO npg_items (id, sm, bi, re, dp, nu, tx, vc, by, bo, da, ts)' +
  ' VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)'

const ROWS = [
  [1, -32768, '9223372036854775807', 3.25, 0.1, '12345678.90', 'h\u00e9llo \u2713 world',
    'varchar', Buffer.from([0, 1, 254, 255]), true, '2024-02-29',
    new Date(Date.UTC(2024, 1, 29, 12, 34, 56, 789))],
  [2, 2, 20n, 2.5, 2.25, 2.5, 'two', 'b', Buffer.from('2'), false, new Date(Date.UTC(2000, 0, 1)),
    '2000-01-01 00:00:00'],
  [3, '3', -30, -0.5, 1e100, '-3', 'three', 'c', Buffer.alloc(0), 't', '1999-12-31',
    '1999-12-31 23:59:59.999999'],
  [4, null, null, null, null, null, 'four', null, null, null, null, null],
]

async function scenario(args, t) {
  const client = new Client({ host: args.host, port: args.port, user: args.user, database: args.dbname })
  client.on('error', (error) => process.stderr.write(`[${args.peer}] client error: ${error.message}\n`))
  const connected = await t.step('connect', async () => {
    await client.connect()
    return true
  })
  if (!connected) return
  try {
    await body(client, t)
  } finally {
    await t.step('end', async () => {
      await client.end()
      return true
    })
  }
}

async function body(client, t) {
  const q = (text, values) => client.query(text, values)
  const rows = async (text, values) => (await q(text, values)).rows
  // A count for a check: null (so the check fails) rather than an exception ending the run.
  const count = (text, values) => q(text, values).then((r) => r.rows[0].n, () => null)

  await t.step('select_1', () => rows('SELECT 1 AS one'))

  // --- DDL ------------------------------------------------------------------------------------
  await t.step('drop_items', async () => tagOf(await q('DROP TABLE IF EXISTS npg_items')))
  await t.step('drop_pairs', async () => tagOf(await q('DROP TABLE IF EXISTS npg_pairs')))
  await t.step('create_items', async () => tagOf(await q(CREATE_ITEMS)))
  await t.step('create_pairs', async () => tagOf(await q(
    'CREATE TABLE npg_pairs (k VARCHAR(10) PRIMARY KEY, v BIGINT NOT NULL)')))

  // --- parameters of every type, and the JS values of every column type -------------------------
  for (const row of ROWS) {
    await t.step(`insert_row_${row[0]}`, async () => tagOf(await q(INSERT_ITEM, row)))
  }
  await t.step('select_row_1', () => rows('SELECT * FROM npg_items WHERE id = $1', [1]))
  await t.step('select_all_rows', () => rows('SELECT * FROM npg_items ORDER BY id'))
  await t.step('select_all_rows_simple_protocol', () => rows(
    'SELECT id, sm, bi, re, dp, nu, tx, vc, by, bo, da, ts FROM npg_items ORDER BY id'))
  await t.step('select_js_types', async () => {
    const [row] = await rows('SELECT * FROM npg_items WHERE id = 1')
    const out = {}
    for (const [k, v] of Object.entries(row)) {
      out[k] = v instanceof Date ? 'Date' : Buffer.isBuffer(v) ? 'Buffer' : typeof v
    }
    return out
  })

  const typed = [
    ['smallint', 'SELECT $1::smallint AS v', [32767]],
    ['smallint_negative', 'SELECT $1::smallint AS v', [-32768]],
    ['integer', 'SELECT $1::integer AS v', [-2147483648]],
    ['integer_from_string', 'SELECT $1::integer AS v', ['42']],
    ['bigint_from_string', 'SELECT $1::bigint AS v', ['-9223372036854775808']],
    ['bigint_from_bigint', 'SELECT $1::bigint AS v', [9007199254740993n]],
    ['real', 'SELECT $1::real AS v', [1.5]],
    ['real_inexact', 'SELECT $1::real AS v', [0.1]],
    ['double', 'SELECT $1::double precision AS v', [2.718281828459045]],
    ['double_infinity', 'SELECT $1::double precision AS v', ['Infinity']],
    ['double_nan', 'SELECT $1::double precision AS v', [NaN]],
    ['numeric', 'SELECT $1::numeric(10,2) AS v', ['-98765432.1']],
    ['numeric_rounded', 'SELECT $1::numeric(10,2) AS v', [1.005]],
    ['numeric_unconstrained', 'SELECT $1::numeric AS v', ['123456789012345678901234567890.000123']],
    ['text', 'SELECT $1::text AS v', ["multi\nline 'quoted' \u00e9\u4e2d"]],
    ['text_empty', 'SELECT $1::text AS v', ['']],
    ['varchar', 'SELECT $1::varchar(20) AS v', ['short']],
    ['bytea', 'SELECT $1::bytea AS v', [Buffer.from([0, 15, 30, 255])]],
    ['bytea_hex_text', 'SELECT $1::bytea AS v', ['\\x00ff10']],
    ['boolean_true', 'SELECT $1::boolean AS v', [true]],
    ['boolean_false', 'SELECT $1::boolean AS v', [false]],
    ['boolean_from_string', 'SELECT $1::boolean AS v', ['yes']],
    ['date', 'SELECT $1::date AS v', ['2024-02-29']],
    ['date_from_js_date', 'SELECT $1::date AS v', [new Date(Date.UTC(1999, 11, 31, 23, 59, 59))]],
    ['timestamp', 'SELECT $1::timestamp AS v', ['2038-01-19 03:14:08.001']],
    ['timestamp_from_js_date', 'SELECT $1::timestamp AS v', [new Date(Date.UTC(1970, 0, 1, 0, 0, 1, 500))]],
    ['null_integer', 'SELECT $1::integer AS v', [null]],
    ['null_text', 'SELECT $1::text AS v', [null]],
    ['untyped_parameter', 'SELECT $1 AS v', ['abc']],
  ]
  for (const [name, text, values] of typed) {
    await t.step(`param_${name}`, async () => withTypes((await rows(text, values))[0].v))
  }
  await t.step('param_mixed', () => rows(
    'SELECT $1::int + $2::bigint AS total, $3::text || $4::varchar AS joined,' +
    ' $5::date + $1::int AS later, $6::boolean AND true AS flag',
    [3, 4, 'ab', 'cd', '2024-12-30', true]))
  await t.step('param_where', () => rows(
    'SELECT id, tx FROM npg_items WHERE id >= $1 AND tx <> $2 ORDER BY id', [2, 'four']))
  await t.step('param_count_mismatch', () => rows('SELECT $1::int AS a, $2::int AS b', [1]))

  // --- named prepared statements ----------------------------------------------------------------
  const byId = (id) => ({ name: 'npg_by_id', text: 'SELECT id, tx, nu FROM npg_items WHERE id = $1', values: [id] })
  await t.step('named_query_first', async () => {
    const result = await client.query(byId(1))
    return { rows: result.rows, fields: fieldsOf(result), ...tagOf(result) }
  })
  await t.step('named_query_second', async () => {
    const result = await client.query(byId(3))
    return { rows: result.rows, fields: fieldsOf(result), ...tagOf(result) }
  })
  await t.step('named_query_no_rows', async () => (await client.query(byId(999))).rows)
  await t.step('named_query_reused_name', () => client.query({ name: 'npg_by_id', text: 'SELECT 2', values: [] }))
  await t.step('named_insert', async () => {
    const insert = (k, v) => ({ name: 'npg_insert_pair', text: 'INSERT INTO npg_pairs (k, v) VALUES ($1, $2)', values: [k, v] })
    const first = await client.query(insert('a', 1))
    const second = await client.query(insert('b', 2))
    return [tagOf(first), tagOf(second)]
  })
  await t.step('named_query_error', () => client.query({ name: 'npg_bad', text: 'SELECT * FROM npg_missing', values: [] }))
  await t.step('named_query_after_error', async () => (await client.query(byId(2))).rows)

  // --- rows as arrays, fields -------------------------------------------------------------------
  await t.step('row_mode_array', async () => {
    const result = await client.query({ text: 'SELECT id, tx, nu FROM npg_items ORDER BY id', rowMode: 'array' })
    return { rows: result.rows, fields: fieldsOf(result) }
  })
  await t.step('row_mode_array_with_params', async () => {
    const result = await client.query({
      text: "SELECT $1::int + 1, 'x' || $2::text, NULL::text AS nothing",
      values: [41, 'y'],
      rowMode: 'array',
    })
    return { rows: result.rows, fields: fieldsOf(result) }
  })
  await t.step('fields_of_every_column_type', async () => fieldsOf(await q('SELECT * FROM npg_items WHERE id < 0')))
  await t.step('fields_of_expressions', async () => fieldsOf(await q(
    "SELECT 1 + 1, '0'::int + 1, 2::bigint AS big, 1.5::numeric AS num, 1.5::real AS r," +
    " 1.5::double precision AS d, 'a'::text AS t, 'b'::varchar AS vc, true AS b," +
    " '2024-01-01'::date AS da, '2024-01-01 00:00:00'::timestamp AS ts, '\\x00'::bytea AS by," +
    ' 1::smallint AS sm, count(*) FROM npg_items')))
  await t.step('fields_of_empty_query', async () => {
    const result = await q('SELECT id FROM npg_items WHERE false')
    return { rows: result.rows, fields: fieldsOf(result), ...tagOf(result) }
  })
  await t.step('duplicate_column_names', () => rows('SELECT 1 AS a, 2 AS a'))
  await t.step('duplicate_column_names_array', async () => {
    const result = await client.query({ text: 'SELECT 1 AS a, 2 AS a', rowMode: 'array' })
    return { rows: result.rows, fields: fieldsOf(result) }
  })

  // --- transactions -----------------------------------------------------------------------------
  await t.step('begin', async () => tagOf(await q('BEGIN')))
  await t.step('insert_in_transaction', async () => tagOf(await q('INSERT INTO npg_pairs (k, v) VALUES ($1, $2)', ['tx', 1])))
  t.check('transaction_sees_own_insert', (await count("SELECT count(*)::int AS n FROM npg_pairs WHERE k = 'tx'")) === 1)
  await t.step('rollback', async () => tagOf(await q('ROLLBACK')))
  t.check('rollback_discards_insert', (await count("SELECT count(*)::int AS n FROM npg_pairs WHERE k = 'tx'")) === 0)

  await t.step('begin_again', async () => tagOf(await q('BEGIN')))
  await t.step('insert_before_commit', async () => tagOf(await q('INSERT INTO npg_pairs (k, v) VALUES ($1, $2)', ['tx', 2])))
  await t.step('commit', async () => tagOf(await q('COMMIT')))
  t.check('commit_keeps_insert', (await count("SELECT count(*)::int AS n FROM npg_pairs WHERE k = 'tx'")) === 1)

  await t.step('aborted_begin', async () => tagOf(await q('BEGIN')))
  await t.step('aborted_duplicate', () => q('INSERT INTO npg_pairs (k, v) VALUES ($1, $2)', ['a', 9]))
  await t.step('aborted_next_statement', () => q('SELECT 1'))
  await t.step('aborted_next_statement_extended', () => q('SELECT $1::int', [1]))
  await t.step('aborted_commit_rolls_back', async () => tagOf(await q('COMMIT')))
  await t.step('after_aborted_transaction', () => rows('SELECT k, v FROM npg_pairs ORDER BY k'))

  await t.step('savepoint_begin', async () => tagOf(await q('BEGIN')))
  await t.step('savepoint_insert_outer', async () => tagOf(await q('INSERT INTO npg_pairs (k, v) VALUES ($1, $2)', ['sp_outer', 1])))
  await t.step('savepoint', async () => tagOf(await q('SAVEPOINT sp1')))
  await t.step('savepoint_insert_inner', async () => tagOf(await q('INSERT INTO npg_pairs (k, v) VALUES ($1, $2)', ['sp_inner', 2])))
  await t.step('rollback_to_savepoint', async () => tagOf(await q('ROLLBACK TO SAVEPOINT sp1')))
  await t.step('savepoint_again', async () => tagOf(await q('SAVEPOINT sp2')))
  await t.step('savepoint_error', () => q('INSERT INTO npg_pairs (k, v) VALUES ($1, $2)', ['a', 3]))
  await t.step('rollback_to_savepoint_after_error', async () => tagOf(await q('ROLLBACK TO sp2')))
  await t.step('savepoint_insert_after', async () => tagOf(await q('INSERT INTO npg_pairs (k, v) VALUES ($1, $2)', ['sp_after', 4])))
  await t.step('release_savepoint', async () => tagOf(await q('RELEASE SAVEPOINT sp2')))
  await t.step('savepoint_commit', async () => tagOf(await q('COMMIT')))
  await t.step('after_savepoints', () => rows("SELECT k, v FROM npg_pairs WHERE k LIKE 'sp%' ORDER BY k"))
  t.check('savepoint_kept_outer_and_after',
    (await count("SELECT count(*)::int AS n FROM npg_pairs WHERE k IN ('sp_outer', 'sp_after')")) === 2 &&
    (await count("SELECT count(*)::int AS n FROM npg_pairs WHERE k = 'sp_inner'")) === 0)
  await t.step('savepoint_outside_transaction', () => q('SAVEPOINT nope'))
  await t.step('rollback_outside_transaction', async () => tagOf(await q('ROLLBACK')))

  // --- errors -----------------------------------------------------------------------------------
  await t.step('error_unique_violation', () => q('INSERT INTO npg_items (id, tx) VALUES ($1, $2)', [1, 'again']))
  await t.step('error_unique_violation_simple', () => q("INSERT INTO npg_items (id, tx) VALUES (1, 'again')"))
  await t.step('error_not_null_violation', () => q('INSERT INTO npg_items (id, tx) VALUES ($1, $2)', [100, null]))
  await t.step('error_undefined_table', () => q('SELECT * FROM npg_missing'))
  await t.step('error_undefined_table_extended', () => q('SELECT * FROM npg_missing WHERE id = $1', [1]))
  await t.step('error_undefined_column', () => q('SELECT nope FROM npg_items'))
  await t.step('error_syntax', () => q('SELEC 1'))
  await t.step('error_division_by_zero', () => q('SELECT 1/0'))
  await t.step('error_division_by_zero_param', () => q('SELECT 10 / $1::int AS v', [0]))
  await t.step('error_smallint_out_of_range', () => q('SELECT $1::smallint AS v', [40000]))
  await t.step('error_invalid_integer_text', () => q('SELECT $1::integer AS v', ['twelve']))
  await t.step('error_fields', async () => {
    try {
      await q('SELECT 1/0')
    } catch (error) {
      return { code: error.code, severity: error.severity, isDatabaseError: error.constructor.name === 'DatabaseError' }
    }
    return null
  })
  await t.step('still_usable_after_errors', () => rows('SELECT 2 AS two'))

  // --- command tags and row counts --------------------------------------------------------------
  await t.step('insert_multi_row', async () => tagOf(await q(
    'INSERT INTO npg_pairs (k, v) VALUES ($1, 10), ($2, 20), ($3, 30)', ['m1', 'm2', 'm3'])))
  await t.step('insert_select', async () => tagOf(await q(
    "INSERT INTO npg_pairs (k, v) SELECT 'c' || id, id FROM npg_items WHERE id <= 2")))
  await t.step('update_rows', async () => tagOf(await q("UPDATE npg_pairs SET v = v + 1 WHERE k LIKE 'm%'")))
  await t.step('update_no_rows', async () => tagOf(await q('UPDATE npg_pairs SET v = 0 WHERE k = $1', ['none'])))
  await t.step('delete_rows', async () => tagOf(await q('DELETE FROM npg_pairs WHERE k IN ($1, $2)', ['m1', 'm2'])))
  await t.step('select_rows', async () => tagOf(await q('SELECT k FROM npg_pairs')))
  await t.step('insert_returning', async () => {
    const result = await q('INSERT INTO npg_pairs (k, v) VALUES ($1, $2) RETURNING k, v * 2 AS doubled', ['r', 21])
    return { rows: result.rows, ...tagOf(result) }
  })
  await t.step('update_returning', async () => {
    const result = await q("UPDATE npg_pairs SET v = v + 1 WHERE k IN ('r', 'm3') RETURNING k, v")
    // RETURNING has no ORDER BY: sort the rows here.
    return { rows: result.rows.sort((a, b) => (a.k < b.k ? -1 : 1)), ...tagOf(result) }
  })
  await t.step('delete_returning', async () => {
    const result = await q('DELETE FROM npg_pairs WHERE k = $1 RETURNING v', ['r'])
    return { rows: result.rows, ...tagOf(result) }
  })
  await t.step('pairs_now', () => rows('SELECT k, v FROM npg_pairs ORDER BY k'))

  // --- multi-statement simple queries -----------------------------------------------------------
  const describe = (results) => (Array.isArray(results) ? results : [results]).map((r) => ({
    rows: r.rows,
    fields: r.fields.map((f) => f.name),
    ...tagOf(r),
  }))
  await t.step('multi_select', async () => describe(await q('SELECT 1 AS a; SELECT 2 AS b')))
  t.check('multi_select_is_array', Array.isArray(await q('SELECT 1; SELECT 2').catch(() => null)))
  await t.step('multi_mixed', async () => describe(await q(
    "INSERT INTO npg_pairs (k, v) VALUES ('ms', 1); UPDATE npg_pairs SET v = 2 WHERE k = 'ms';" +
    " SELECT k, v FROM npg_pairs WHERE k = 'ms'; DELETE FROM npg_pairs WHERE k = 'ms'")))
  await t.step('multi_with_empty_result', async () => describe(await q(
    'SELECT id FROM npg_items WHERE false; SELECT count(*) AS n FROM npg_items')))
  await t.step('multi_error_midway', () => q(
    "INSERT INTO npg_pairs (k, v) VALUES ('mx', 1); SELECT 1/0; INSERT INTO npg_pairs (k, v) VALUES ('my', 1)"))
  await t.step('multi_error_rolled_back', () => rows(
    "SELECT k FROM npg_pairs WHERE k IN ('mx', 'my') ORDER BY k"))
  await t.step('multi_transaction_block', async () => describe(await q(
    "BEGIN; INSERT INTO npg_pairs (k, v) VALUES ('mt', 1); COMMIT; SELECT v FROM npg_pairs WHERE k = 'mt'")))
  await t.step('single_statement_not_array', async () => Array.isArray(await q('SELECT 1 AS a;')))

  await t.step('final_counts', () => rows(
    'SELECT (SELECT count(*) FROM npg_items) AS items, (SELECT count(*) FROM npg_pairs) AS pairs'))
}

async function main() {
  let args
  try {
    args = parseArgs(process.argv.slice(2))
  } catch (error) {
    process.stderr.write(`${error.message}\n`)
    process.exit(2)
  }
  const t = new Transcript(args.peer)
  await scenario(args, t)
  process.exitCode = t.failures ? 1 : 0
}

main().catch((error) => {
  process.stderr.write(`unexpected: ${error && error.stack}\n`)
  process.exit(2)
})
