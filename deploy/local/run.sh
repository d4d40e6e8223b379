#!/usr/bin/env bash
# `make run`: the whole stack in the foreground against local PostgreSQL and Redis (the
# machine's, or private ones services.sh starts; those stop with the stack).
set -euo pipefail
cd "$(dirname "$0")/../.."
started() { if [ -f .run/started ]; then wc -l < .run/started; else echo 0; fi; }
before=$(started)
deploy/local/services.sh

db=${CHORUS_LOCAL_DB:-chorus}
if ! psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
  psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $db"
fi
export CHORUS_DATABASE_URL=${CHORUS_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/$db?sslmode=disable}
# Endpoints on this machine (a local receiver) may take webhooks; production leaves this off.
export CHORUS_WEBHOOKS_ALLOW_LOOPBACK=${CHORUS_WEBHOOKS_ALLOW_LOOPBACK:-true}
if [ "$(started)" = "$before" ]; then
  exec bin/chorus
fi
# Private servers were started for this run: they stop when the stack does.
bin/chorus &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null || true' INT TERM
set +e
while :; do # a trapped signal interrupts wait: wait again until bin/chorus has exited
  wait "$pid"
  status=$?
  kill -0 "$pid" 2>/dev/null || break
done
deploy/local/stop.sh
exit "$status"
