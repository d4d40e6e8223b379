#!/usr/bin/env bash
# `make stop`: stop the private PostgreSQL and Redis that services.sh started for this checkout
# (listed in .run/started); the machine's own servers are left alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -f .run/started ] || exit 0
dir=$(readlink -f .run/private)
while read -r what ctl data; do
  case $what in
    pg)
      echo "stopping the private PostgreSQL in $data"
      if [ "$(id -u)" = 0 ]; then runuser -u "$(stat -c %U "$data")" -- "$ctl" -D "$data" -m fast stop >/dev/null || true
      else "$ctl" -D "$data" -m fast stop >/dev/null || true
      fi
      ;;
    redis)
      echo "stopping the private Redis in $dir"
      [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
      ;;
  esac
done < .run/started
rm -f .run/started
