#!/usr/bin/env python3
"""Seeds the `sql` fuzz target's corpus from the sqllogictest files.

Every `statement ...` and `query ...` record of sql-tests/slt/*.slt gives its SQL text (the lines
after the record header, up to a blank line or `----`). Each distinct statement is written to
corpus/sql/<sha1 of the text>, one file per statement, so running the script again changes
nothing. Statements with COPY are left out: the target skips them (they write files).

Usage (from anywhere): python3 engine/fuzz/seed_sql_corpus.py
"""

import hashlib
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
SLT = HERE.parent.parent / "sql-tests" / "slt"
OUT = HERE / "corpus" / "sql"


def statements(path):
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        head = lines[i].split()
        i += 1
        if not head or head[0] not in ("statement", "query"):
            continue
        body = []
        while i < len(lines) and lines[i].strip() and lines[i].strip() != "----":
            body.append(lines[i])
            i += 1
        if body:
            yield "\n".join(body) + "\n"


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    seen = set()
    for path in sorted(SLT.glob("*.slt")):
        for sql in statements(path):
            if "COPY" in sql.upper() or sql in seen:
                continue
            seen.add(sql)
            name = hashlib.sha1(sql.encode("utf-8")).hexdigest()
            (OUT / name).write_text(sql, encoding="utf-8")
    print(f"{len(seen)} statements in {OUT}")


if __name__ == "__main__":
    main()
