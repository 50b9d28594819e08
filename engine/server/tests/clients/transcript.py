"""What a client scenario saw, one JSON line per step, so that the same scenario run against
PostgreSQL 15 and against `rowdex serve` can be compared line by line (the Rust runner,
engine/server/tests/server/drivers.rs, does that).

A scenario is a Python file whose `main(args, t)` takes the parsed command line (`host`, `port`,
`user`, `dbname`, `peer`: "postgres" or "rowdex") and a `Transcript`, and records each step with
`t.step(name, fn)`: the step's value (normalised to JSON) or its error's SQLSTATE and class.
Error messages are not recorded (they are worded differently); SQLSTATEs are.
"""

import argparse
import base64
import datetime
import decimal
import json
import math
import sys
import traceback
import uuid


def normalise(value):
    """A value as JSON the two peers can be compared on."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return value
    if isinstance(value, decimal.Decimal):
        return {"decimal": str(value.normalize()) if value == value else "NaN"}
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return {type(value).__name__: value.isoformat()}
    if isinstance(value, datetime.timedelta):
        return {"timedelta": value.total_seconds()}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"bytes": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, uuid.UUID):
        return {"uuid": str(value)}
    if isinstance(value, dict):
        return {str(k): normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [normalise(v) for v in value]
        if isinstance(value, (set, frozenset)):
            items.sort(key=json.dumps)
        return items
    if hasattr(value, "_asdict"):
        return normalise(value._asdict())
    if hasattr(value, "_mapping"):
        return normalise(dict(value._mapping))
    if hasattr(value, "tolist"):
        return normalise(value.tolist())
    return {"repr": type(value).__name__}


def sqlstate_of(error):
    """The SQLSTATE a driver attached to an error (psycopg, asyncpg, SQLAlchemy's wrapper)."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        for attribute in ("sqlstate", "pgcode"):
            code = getattr(error, attribute, None)
            if isinstance(code, str) and code:
                return code
        error = getattr(error, "orig", None) or error.__cause__ or error.__context__
    return None


class Transcript:
    def __init__(self, peer):
        self.peer = peer
        self.failures = 0

    def record(self, name, **fields):
        print(json.dumps({"step": name, **fields}, sort_keys=True), flush=True)

    def _record_error(self, name, error):
        """A failed step: its SQLSTATE (or error class) in the transcript, its message on stderr."""
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        print(f"[{self.peer}] {name}: {detail}", file=sys.stderr, flush=True)
        self.record(name, error=sqlstate_of(error) or type(error).__name__)

    def step(self, name, fn):
        """Runs `fn`, records its value or its error, and returns the value (None on error)."""
        try:
            value = fn()
        except Exception as error:  # noqa: BLE001 - every error is part of the transcript
            self._record_error(name, error)
            return None
        self.record(name, value=normalise(value))
        return value

    async def step_async(self, name, fn):
        """`step` for a coroutine function (an asyncpg call)."""
        try:
            value = await fn()
        except Exception as error:  # noqa: BLE001 - every error is part of the transcript
            self._record_error(name, error)
            return None
        self.record(name, value=normalise(value))
        return value

    def check(self, name, condition, detail=""):
        """A fact the scenario asserts on its own (true on both peers, or the run fails)."""
        if not condition:
            self.failures += 1
            print(f"[{self.peer}] check failed: {name} {detail}", file=sys.stderr, flush=True)
        self.record(name, check=bool(condition))


def psycopg_connect(args):
    """A psycopg 3 connection to the peer, in autocommit."""
    import psycopg

    return psycopg.connect(
        host=args.host, port=args.port, user=args.user, dbname=args.dbname, autocommit=True
    )


def statement_result(conn, sql, params=None, binary=None):
    """What a psycopg statement gave: its rows, its columns' names and type OIDs, its row count."""
    cur = conn.cursor()
    cur.execute(sql, params, binary=binary)
    return {
        "rows": cur.fetchall() if cur.description else None,
        "description": [(d.name, d.type_code) for d in cur.description or []],
        "rowcount": cur.rowcount,
    }


def run(main):
    parser = argparse.ArgumentParser()
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--dbname", required=True)
    parser.add_argument("--peer", choices=["postgres", "rowdex"], required=True)
    args = parser.parse_args()
    transcript = Transcript(args.peer)
    main(args, transcript)
    sys.exit(1 if transcript.failures else 0)
