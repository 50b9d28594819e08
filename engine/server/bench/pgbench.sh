#!/usr/bin/env bash
# pgbench against `rowdex serve` and PostgreSQL 15, side by side on this machine (issue 22).
#
#   engine/server/bench/pgbench.sh [--scale 10] [--seconds 20] [--clients "1 4 16"] [--long 60]
#                                  [--scripts "select-only read-write simple-update"]
#
# Both servers hold the same pgbench data (PostgreSQL's `pgbench -i`, copied into rowdex with
# COPY ... TO STDOUT | COPY ... FROM STDIN), the same primary keys and one secondary index
# (pgbench_accounts (bid), so CHECK TABLE has an index to compare). Fairness, as in the `peers`
# bench: rowdex's buffered journal and PostgreSQL's synchronous_commit=off both survive a
# process crash and may lose the last commits on power loss; PostgreSQL's shared_buffers is
# 512 MB, fjall's block cache its default 512 MiB; both on loopback TCP; pgbench uses
# prepared statements (-M prepared) and one thread per client against both.
#
# Scripts: pgbench's built-in select-only (-S: one point read by primary key), read-write
# (pgbench's tpcb-like transaction: three UPDATEs, a SELECT, an INSERT in BEGIN/END) and
# simple-update (-N: tpcb-like without the tellers' and branches' UPDATEs, so no hot rows).
# Both run READ COMMITTED, their default: a second UPDATE of a branch waits for the first's
# row lock on both (rowdex's SERIALIZABLE would conflict at COMMIT with 40001 instead).
# pgbench retries serialization failures and deadlocks (--max-tries 0: unlimited, within the
# run's time) and reports the retries, which should be none. After the long read-write run
# (16 clients) the script checks on rowdex that no transaction failed, that what the run added
# to the balances of accounts, tellers and branches each equals what it added to the history
# (the sums are taken before and after it: simple-update moves accounts and history without
# tellers and branches, so the totals alone agree only when it did not run), that accounts and
# history agree in total, and that CHECK TABLE is clean.
#
# Needs: the release binary (cargo build --release --bin rowdex), PostgreSQL 15's server and
# pgbench (postgresql-15), run as root (PostgreSQL runs as user postgres) or as postgres.
set -euo pipefail
cd "$(dirname "$0")/../../.."

scale=10 seconds=20 clients="1 4 16" long=60 scripts="select-only read-write simple-update"
while [ $# -gt 0 ]; do
  case "$1" in
    --scale) scale=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --long) long=$2; shift 2 ;;
    --scripts) scripts=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

target="${CARGO_TARGET_DIR:-$HOME/.cache/rowdex/target}"
rowdex="$target/release/rowdex"
pgbin=/usr/lib/postgresql/15/bin
[ -x "$rowdex" ] || { echo "build it first: cargo build --release --bin rowdex" >&2; exit 1; }
[ -x "$pgbin/postgres" ] || { echo "PostgreSQL 15's server is missing (apt-get install postgresql-15)" >&2; exit 1; }

work=$(mktemp -d /tmp/rowdex-pgbench.XXXXXX)
chmod 755 "$work"
pg_port=54331 rowdex_port=54332
pg_pid="" rowdex_pid=""
cleanup() {
  [ -n "$rowdex_pid" ] && kill "$rowdex_pid" 2>/dev/null && wait "$rowdex_pid" 2>/dev/null
  [ -n "$pg_pid" ] && kill "$pg_pid" 2>/dev/null
  # runuser does not always pass the signal on: stop the postmaster itself, by its pid file,
  # so that no server is left on the port for the next run.
  local postmaster
  postmaster=$(head -1 "$work/pg/postmaster.pid" 2>/dev/null || true)
  [ -n "$postmaster" ] && kill "$postmaster" 2>/dev/null
  for _ in $(seq 50); do [ -n "$postmaster" ] && kill -0 "$postmaster" 2>/dev/null || break; sleep 0.2; done
  rm -rf "$work"
}
trap cleanup EXIT

as_postgres() {
  if [ "$(id -un)" = postgres ]; then "$@"; else runuser -u postgres -- "$@"; fi
}

echo "== PostgreSQL 15: initdb, pgbench -i -s $scale" >&2
mkdir -p "$work/pg" && chown postgres "$work/pg" 2>/dev/null || true
as_postgres "$pgbin/initdb" -D "$work/pg" -A trust -U postgres --locale=C >/dev/null
as_postgres "$pgbin/postgres" -D "$work/pg" -p $pg_port -k "$work/pg" -c listen_addresses=127.0.0.1 \
  -c shared_buffers=512MB -c synchronous_commit=off -c max_connections=50 >"$work/pg.log" 2>&1 &
pg_pid=$!
for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p $pg_port && break; sleep 0.2; done
pg() { psql -X -q -h 127.0.0.1 -p $pg_port -U postgres -d postgres "$@"; }
pgbench -i -q -s "$scale" -h 127.0.0.1 -p $pg_port -U postgres postgres 2>/dev/null
pg -c "CREATE INDEX pgbench_accounts_bid ON pgbench_accounts (bid)" -c "VACUUM ANALYZE"

echo "== rowdex serve (fjall, buffered journal): the same tables, loaded by COPY" >&2
"$rowdex" serve "$work/rowdex" --listen 127.0.0.1:$rowdex_port --max-connections 50 >"$work/rowdex.log" 2>&1 &
rowdex_pid=$!
for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p $rowdex_port && break; sleep 0.2; done
rx() { psql -X -q -v ON_ERROR_STOP=1 -h 127.0.0.1 -p $rowdex_port -U rowdex -d rowdex "$@"; }
rx -c "CREATE TABLE pgbench_branches (bid INT PRIMARY KEY, bbalance INT, filler CHAR(88));
  CREATE TABLE pgbench_tellers (tid INT PRIMARY KEY, bid INT, tbalance INT, filler CHAR(84));
  CREATE TABLE pgbench_accounts (aid INT PRIMARY KEY, bid INT, abalance INT, filler CHAR(84));
  CREATE TABLE pgbench_history (tid INT, bid INT, aid INT, delta INT, mtime TIMESTAMP, filler CHAR(22))"
load_started=$(date +%s.%N)
for table in branches tellers accounts; do
  pg -c "COPY pgbench_$table TO STDOUT" | rx -c "COPY pgbench_$table FROM STDIN"
done
rx -c "CREATE INDEX pgbench_accounts_bid ON pgbench_accounts (bid); ANALYZE; VACUUM"
echo "   rowdex load and index: $(awk -v a="$(date +%s.%N)" -v b="$load_started" 'BEGIN { printf "%.1f", a - b }') s" >&2

# tps and average latency (ms) of one pgbench run, and its failed/retried counts.
run() { # port script-args clients seconds
  local port=$1 args=$2 c=$3 t=$4 out
  out=$(pgbench -n -M prepared $args -c "$c" -j "$c" -T "$t" --max-tries 0 \
        -h 127.0.0.1 -p "$port" -U postgres postgres 2>&1) || { echo "$out" >&2; return 1; }
  local tps lat failed retried
  tps=$(echo "$out" | sed -n 's/^tps = \([0-9.]*\).*/\1/p')
  lat=$(echo "$out" | sed -n 's/^latency average = \([0-9.]*\) ms/\1/p')
  failed=$(echo "$out" | sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p')
  retried=$(echo "$out" | sed -n 's/^number of transactions retried: \([0-9]*\).*/\1/p')
  echo "$tps $lat ${failed:-0} ${retried:-0}"
}

echo
echo "| script | clients | rowdex tps | PostgreSQL tps | rowdex / PostgreSQL | rowdex latency (ms) | PostgreSQL latency (ms) | rowdex retried (40001) | failed (rowdex, PostgreSQL) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for script in $scripts; do
  case $script in
    select-only) args="-S" ;;
    read-write) args="-b tpcb-like" ;;
    simple-update) args="-N" ;;
    *) echo "unknown script $script" >&2; exit 2 ;;
  esac
  for c in $clients; do
    read -r r_tps r_lat r_failed r_retried < <(run $rowdex_port "$args" "$c" "$seconds")
    read -r p_tps p_lat p_failed _ < <(run $pg_port "$args" "$c" "$seconds")
    ratio=$(awk -v a="$r_tps" -v b="$p_tps" 'BEGIN { printf "%.2f", a / b }')
    printf '| %s | %s | %.0f | %.0f | %sx | %s | %s | %s | %s, %s |\n' \
      "$script" "$c" "$r_tps" "$p_tps" "$ratio" "$r_lat" "$p_lat" "$r_retried" "$r_failed" "$p_failed"
  done
done

echo
sums() {
  rx -t -A -F ' ' -c "SELECT (SELECT sum(abalance) FROM pgbench_accounts),
    (SELECT sum(tbalance) FROM pgbench_tellers), (SELECT sum(bbalance) FROM pgbench_branches),
    (SELECT coalesce(sum(delta), 0) FROM pgbench_history), (SELECT count(*) FROM pgbench_history)"
}
echo "== rowdex: tpcb-like, 16 clients, ${long} s, then the checks" >&2
read -r a0 t0 b0 h0 n0 <<<"$(sums)"
read -r l_tps l_lat l_failed l_retried < <(run $rowdex_port "-b tpcb-like" 16 "$long")
echo "long read-write run on rowdex: 16 clients, ${long} s: $l_tps tps, latency $l_lat ms, $l_failed failed, $l_retried retried (40001)"
read -r a t b h n <<<"$(sums)"
echo "sums of abalance, tbalance, bbalance, history delta; history rows: before the long run $a0 $t0 $b0 $h0 $n0, after it $a $t $b $h $n"
da=$((a - a0)) dt=$((t - t0)) db=$((b - b0)) dh=$((h - h0))
echo "the long run added: abalance $da, tbalance $dt, bbalance $db, history delta $dh in $((n - n0)) rows"
check=$(rx -t -A -c "CHECK TABLE pgbench_accounts")
echo "CHECK TABLE pgbench_accounts: $check"
status=0
[ "$l_failed" = 0 ] || { echo "FAILED: $l_failed transactions failed" >&2; status=1; }
{ [ "$da" = "$dh" ] && [ "$dt" = "$dh" ] && [ "$db" = "$dh" ]; } || { echo "FAILED: the long run's changes to the balances do not sum to its history" >&2; status=1; }
[ "$a" = "$h" ] || { echo "FAILED: the accounts' balances do not sum to the history" >&2; status=1; }
echo "$check" | grep -q '|ok$' && ! echo "$check" | grep -qv '|ok$' || { echo "FAILED: CHECK TABLE" >&2; status=1; }
exit $status
