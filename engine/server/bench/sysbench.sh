#!/usr/bin/env bash
# sysbench's OLTP workloads against `rowdex serve` and PostgreSQL 15, side by side on this
# machine (issue 43).
#
#   engine/server/bench/sysbench.sh [--tables 4] [--table-size 100000] [--seconds 12]
#                                   [--threads "1 4"] [--workloads "oltp_point_select ..."]
#
# Both servers get their tables from sysbench's own `prepare` (its unmodified Lua scripts:
# `id SERIAL` primary key, a secondary index on k, then ANALYZE), and each workload runs for
# the same time with the same threads against both, PostgreSQL first. Fairness, as in
# pgbench.sh: rowdex's buffered journal and PostgreSQL's synchronous_commit=off both survive a
# process crash and may lose the last commits on power loss; shared_buffers is 512 MB, fjall's
# block cache its default 512 MiB; both on loopback TCP; sysbench's pgsql driver prepares its
# statements (libpq's PQprepare / PQexecPrepared) against both.
#
# rowdex's transactions are optimistic: concurrent writers of one row conflict at COMMIT with
# 40001 where PostgreSQL waits for the row lock. sysbench retries those (it ignores 40001 and
# 40P01) and counts them as "ignored errors", printed per cell.
#
# Prints one markdown row per workload and thread count: tps, p95 latency (ms), ratio, and each
# server's CPU time per transaction (from /proc: user and system time of rowdex's process, of
# PostgreSQL's postmaster and backends), which does not depend on how the two cores were
# shared with sysbench.
# Needs: the release binary (cargo build --release --bin rowdex), PostgreSQL 15's server,
# psql and sysbench (scripts/install-clients installs them), run as root or as postgres.
set -euo pipefail
cd "$(dirname "$0")/../../.."

tables=4 size=100000 seconds=12 threads="1 4"
workloads="oltp_point_select oltp_read_only oltp_read_write oltp_update_index oltp_update_non_index oltp_insert oltp_write_only"
while [ $# -gt 0 ]; do
  case "$1" in
    --tables) tables=$2; shift 2 ;;
    --table-size) size=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --workloads) workloads=$2; shift 2 ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
  esac
done

target="${CARGO_TARGET_DIR:-$HOME/.cache/rowdex/target}"
rowdex="${ROWDEX_BIN:-$target/release/rowdex}"
pgbin=/usr/lib/postgresql/15/bin
[ -x "$rowdex" ] || { echo "build it first: cargo build --release --bin rowdex" >&2; exit 1; }
[ -x "$pgbin/postgres" ] || { echo "PostgreSQL 15's server is missing (apt-get install postgresql-15)" >&2; exit 1; }
command -v sysbench >/dev/null || { echo "sysbench is missing (apt-get install sysbench)" >&2; exit 1; }

work=$(mktemp -d /tmp/rowdex-sysbench.XXXXXX)
chmod 755 "$work"
pg_port=54341 rowdex_port=54342
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

echo "== PostgreSQL 15: initdb" >&2
mkdir -p "$work/pg" && chown postgres "$work/pg" 2>/dev/null || true
as_postgres "$pgbin/initdb" -D "$work/pg" -A trust -U postgres --locale=C >/dev/null
as_postgres "$pgbin/postgres" -D "$work/pg" -p $pg_port -k "$work/pg" -c listen_addresses=127.0.0.1 \
  -c shared_buffers=512MB -c synchronous_commit=off -c max_connections=50 >"$work/pg.log" 2>&1 &
pg_pid=$!
for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p $pg_port && break; sleep 0.2; done
psql -X -q -h 127.0.0.1 -p $pg_port -U postgres -d postgres -c "CREATE DATABASE sbtest"

echo "== rowdex serve (fjall, buffered journal)" >&2
"$rowdex" serve "$work/rowdex" --listen 127.0.0.1:$rowdex_port --max-connections 50 >"$work/rowdex.log" 2>&1 &
rowdex_pid=$!
for _ in $(seq 50); do pg_isready -q -h 127.0.0.1 -p $rowdex_port && break; sleep 0.2; done

sb() { # port user workload action [threads]
  sysbench "$3" --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$1" --pgsql-user="$2" \
    --pgsql-db=sbtest --tables="$tables" --table-size="$size" --threads="${5:-1}" \
    --time="$seconds" --percentile=95 --report-interval=0 "$4"
}

echo "== sysbench prepare: $tables tables x $size rows on each" >&2
for peer in "$pg_port postgres" "$rowdex_port rowdex"; do
  read -r port user <<<"$peer"
  started=$(date +%s.%N)
  sb "$port" "$user" oltp_read_write prepare >/dev/null
  psql -X -q -h 127.0.0.1 -p "$port" -U "$user" -d sbtest -c "ANALYZE" >/dev/null
  echo "   $user: $(awk -v a="$(date +%s.%N)" -v b="$started" 'BEGIN { printf "%.1f", a - b }') s" >&2
done
psql -X -q -h 127.0.0.1 -p $rowdex_port -U rowdex -d sbtest -c "VACUUM" >/dev/null

# CPU time (clock ticks) a server has used so far: the process `root` and its children, with
# the children that have exited (PostgreSQL's backends are the postmaster's children; rowdex is
# one process).
cpu_ticks() { # root-pid
  # (A process may end between the glob and the read: cat skips it, where awk would stop, and
  # its failure must not end the script under pipefail.)
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v root="$1" '{
      # The command name is in parentheses and may hold spaces: count fields after it.
      pid = $1; sub(/^.*\) /, ""); ppid = $2; ticks = $12 + $13
      if (pid == root) total += ticks + $14 + $15
      else if (ppid == root) total += ticks
    } END { print total + 0 }'
}
ticks_per_second=$(getconf CLK_TCK)

# tps, p95 latency (ms), ignored errors and the server's CPU time per transaction (ms) of one
# run.
run() { # port user workload threads server-pid
  local out tps p95 errors before after cpu
  before=$(cpu_ticks "$5")
  out=$(sb "$1" "$2" "$3" run "$4" 2>&1) || { echo "$out" >&2; return 1; }
  after=$(cpu_ticks "$5")
  tps=$(echo "$out" | sed -n 's/^ *transactions: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p')
  p95=$(echo "$out" | sed -n 's/^ *95th percentile: *\([0-9.]*\)/\1/p')
  errors=$(echo "$out" | sed -n 's/^ *ignored errors: *\([0-9]*\).*/\1/p')
  cpu=$(awk -v t="$((after - before))" -v hz="$ticks_per_second" -v tps="${tps:-0}" -v s="$seconds" \
    'BEGIN { printf "%.3f", (tps > 0 ? t * 1000 / hz / (tps * s) : 0) }')
  echo "${tps:-0} ${p95:-0} ${errors:-0} $cpu"
}

postmaster=$(head -1 "$work/pg/postmaster.pid")
echo
echo "| workload | threads | rowdex tps | PostgreSQL tps | rowdex / PostgreSQL | rowdex p95 (ms) | PostgreSQL p95 (ms) | rowdex ignored errors (40001) | server CPU per transaction, rowdex / PostgreSQL (ms) |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for workload in $workloads; do
  for t in $threads; do
    read -r p_tps p_p95 _ p_cpu < <(run $pg_port postgres "$workload" "$t" "$postmaster")
    read -r r_tps r_p95 r_errors r_cpu < <(run $rowdex_port rowdex "$workload" "$t" "$rowdex_pid")
    ratio=$(awk -v a="$r_tps" -v b="$p_tps" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
    printf '| %s | %s | %.0f | %.0f | %sx | %s | %s | %s | %s / %s |\n' \
      "$workload" "$t" "$r_tps" "$p_tps" "$ratio" "$r_p95" "$p_p95" "$r_errors" "$r_cpu" "$p_cpu"
  done
done
