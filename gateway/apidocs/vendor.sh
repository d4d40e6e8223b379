#!/usr/bin/env bash
# Vendors the renderer of the gateway's API reference page (/docs) at `make generate`: Redoc's
# standalone bundle, one self-contained script with no run-time fetches of its own.
#
# It fetches exactly redoc@$VERSION from the npm registry with `npm pack` into a temporary
# folder (npm checks the tarball against the registry's metadata), checks the tarball against
# the sha512 pinned here, extracts only the bundle, its third-party license notices and
# Redoc's LICENSE, checks each against the sha256 pinned here, and writes them to redoc/ beside
# this script, where apidocs.go embeds them. A changed upstream file fails here, loudly; the
# written bytes are the pinned ones, so a re-run changes nothing (make check holds them equal).
#
# To upgrade: set VERSION, run this script with PIN=1 (it prints the new hashes instead of
# checking them), read the diff of the bundle's license notices, paste the hashes below, and
# run the e2e test TestAPIReferenceInABrowser.
set -euo pipefail
cd "$(dirname "$0")"

PKG=redoc
VERSION=2.5.4
TARBALL_SHA512=sha512-M6jWhG1qoBnH6TFmzJnstyCZ87HmOY/UzDm78mHiYihEdlV/YcS9ogOo1NlElnJMeLsyxHFe2yFc4sNjHTrABQ==
# file in the package -> name under redoc/ and its sha256
FILES=(
  "package/bundles/redoc.standalone.js redoc.standalone.js dcaf76612bc4a3fbcc923a8966dee2f6146a5f32e5ce1b6f02dd60cbbf89500b"
  "package/bundles/redoc.standalone.js.LICENSE.txt redoc.standalone.js.LICENSE.txt eed602ec32e00b2b9df1984fbcc26a687b1b3193ec01961389c4b8439e6edf73"
  "package/LICENSE LICENSE d3026d549cf68ab7355bcfa85877bf8f845b3334a7efbfdc63936432fb34ff0e"
)

fail() { echo "apidocs/vendor.sh: $*" >&2; exit 1; }
command -v npm >/dev/null || fail "npm is needed to fetch $PKG@$VERSION (Debian: apt-get install npm)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# No lifecycle scripts, no audit, funding or update notices: only the tarball.
export npm_config_update_notifier=false npm_config_fund=false npm_config_audit=false npm_config_loglevel=error
tgz=$(cd "$tmp" && npm pack --ignore-scripts "$PKG@$VERSION" | tail -n 1)
[ -f "$tmp/$tgz" ] || fail "npm pack $PKG@$VERSION wrote no tarball"

got=sha512-$(openssl dgst -sha512 -binary "$tmp/$tgz" | openssl base64 -A)
if [ "${PIN:-}" = 1 ]; then
  echo "TARBALL_SHA512=$got"
elif [ "$got" != "$TARBALL_SHA512" ]; then
  fail "$PKG@$VERSION tarball is $got, pinned $TARBALL_SHA512: upstream changed, do not vendor it unread"
fi

mkdir -p "$tmp/x" redoc
for entry in "${FILES[@]}"; do
  read -r src dst sum <<<"$entry"
  tar -xzf "$tmp/$tgz" -C "$tmp/x" "$src" || fail "$PKG@$VERSION has no $src"
  got=$(sha256sum "$tmp/x/$src" | cut -d' ' -f1)
  if [ "${PIN:-}" = 1 ]; then
    echo "$src $dst $got"
  elif [ "$got" != "$sum" ]; then
    fail "$src of $PKG@$VERSION is sha256 $got, pinned $sum"
  fi
  # Rewrite only what differs, so a re-run leaves the files (and Go's build cache) alone.
  cmp -s "$tmp/x/$src" "redoc/$dst" || install -m 0644 "$tmp/x/$src" "redoc/$dst"
done
