#!/usr/bin/env bash
# Make sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer. The machine's own
# servers are used when they answer (an installed but stopped PostgreSQL cluster is started
# first); when one cannot be reached, a private one is started for this checkout instead, its
# files under .run/private, and recorded in .run/started so that the stack (run.sh) or
# `make stop` stops it again. Started as root, the private servers run as an unprivileged user
# (PostgreSQL refuses root), in a directory under /tmp that user can reach.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .run

pg_up() { pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; }
redis_up() { redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; }

wait_for() { # seconds, check...
  local tries=$(($1 * 2)); shift
  for _ in $(seq 1 "$tries"); do "$@" && return 0; sleep 0.5; done
  return 1
}

# private_dir prints the directory of the private servers, making it on first use.
private_dir() {
  if [ -L .run/private ] || [ -d .run/private ]; then
    readlink -f .run/private
    return
  fi
  if [ "$(id -u)" = 0 ]; then
    local dir
    dir=$(mktemp -d /tmp/chorus-private.XXXXXX)
    chown "$(private_user)" "$dir"
    ln -s "$dir" .run/private
  else
    mkdir -p .run/private
  fi
  readlink -f .run/private
}

# private_user is who runs the private servers: the invoking user, or when that is root the
# machine's postgres account if there is one, else nobody.
private_user() {
  if [ "$(id -u)" != 0 ]; then id -un
  elif id postgres >/dev/null 2>&1; then echo postgres
  else echo nobody
  fi
}

# as_user runs a command as private_user.
as_user() {
  if [ "$(id -u)" = 0 ]; then runuser -u "$(private_user)" -- "$@"; else "$@"; fi
}

if ! pg_up; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ] && [ -n "$(ls /etc/postgresql)" ]; then
    echo "PostgreSQL does not answer on 127.0.0.1:5432: starting the machine's cluster"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start 2>&1 | sed 's/^/  /' || true
    wait_for 10 pg_up || echo "the machine's cluster does not answer on 127.0.0.1:5432"
  fi
fi
if ! pg_up; then
  bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
  [ -n "$bindir" ] || bindir=$(dirname "$(command -v initdb 2>/dev/null || true)")
  [ -x "$bindir/initdb" ] || { echo "no PostgreSQL answers on 127.0.0.1:5432 and none is installed (apt-get install postgresql)" >&2; exit 1; }
  dir=$(private_dir)
  echo "starting a private PostgreSQL in $dir/pg (as $(private_user)); make stop stops it"
  [ -d "$dir/pg" ] || as_user "$bindir/initdb" -D "$dir/pg" -U postgres --auth=trust >/dev/null
  as_user "$bindir/pg_ctl" -D "$dir/pg" -l "$dir/pg.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p 5432 -k $dir -c max_connections=400" start >/dev/null
  echo "pg $bindir/pg_ctl $dir/pg" >> .run/started
  wait_for 30 pg_up || { echo "the private PostgreSQL did not come up: see $dir/pg.log" >&2; exit 1; }
fi

if ! redis_up; then
  command -v redis-server >/dev/null || { echo "no Redis answers on 127.0.0.1:6379 and none is installed (apt-get install redis-server)" >&2; exit 1; }
  dir=$(private_dir)
  echo "starting a private Redis in $dir (as $(private_user)); make stop stops it"
  as_user redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir "$dir" --logfile "$dir/redis.log" --pidfile "$dir/redis.pid"
  echo "redis" >> .run/started
  wait_for 30 redis_up || { echo "the private Redis did not come up: see $dir/redis.log" >&2; exit 1; }
fi
