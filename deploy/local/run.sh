#!/usr/bin/env bash
# `make run`: the whole stack in the foreground against local PostgreSQL and Redis.
set -euo pipefail
cd "$(dirname "$0")/../.."
deploy/local/services.sh

db=${CHORUS_LOCAL_DB:-chorus}
if ! psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = '$db'" | grep -q 1; then
  psql -h 127.0.0.1 -U postgres -qc "CREATE DATABASE $db"
fi
export CHORUS_DATABASE_URL=${CHORUS_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/$db?sslmode=disable}
exec bin/chorus
