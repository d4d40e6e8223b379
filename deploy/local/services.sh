#!/usr/bin/env bash
# Make sure PostgreSQL (127.0.0.1:5432) and Redis (127.0.0.1:6379) answer: use the machine's
# own servers, starting them if they are installed but stopped, else private ones under .run/.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .run

wait_for() { # name, check command...
  local name=$1; shift
  for _ in $(seq 1 60); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
  echo "$name did not come up" >&2; return 1
}

if ! pg_isready -h 127.0.0.1 -p 5432 -q 2>/dev/null; then
  if command -v pg_ctlcluster >/dev/null && [ -d /etc/postgresql ] && [ -n "$(ls /etc/postgresql)" ]; then
    echo "starting the machine's PostgreSQL cluster"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start || true
  else
    bindir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
    [ -n "$bindir" ] || { echo "no PostgreSQL answers on 127.0.0.1:5432 and none is installed" >&2; exit 1; }
    echo "starting a private PostgreSQL under .run/pg"
    [ -d .run/pg ] || "$bindir/initdb" -D .run/pg -U postgres --auth=trust >/dev/null
    "$bindir/pg_ctl" -D .run/pg -l .run/pg.log -o "-c listen_addresses=127.0.0.1 -p 5432 -k $PWD/.run" start >/dev/null
  fi
  wait_for PostgreSQL pg_isready -h 127.0.0.1 -p 5432 -q
fi

if ! redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null | grep -q PONG; then
  command -v redis-server >/dev/null || { echo "no Redis answers on 127.0.0.1:6379 and none is installed" >&2; exit 1; }
  echo "starting a private Redis under .run/"
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
    --dir "$PWD/.run" --logfile "$PWD/.run/redis.log"
  wait_for Redis sh -c 'redis-cli -h 127.0.0.1 -p 6379 ping | grep -q PONG'
fi
