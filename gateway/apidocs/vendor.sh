#!/usr/bin/env bash
# Vendors the renderer of the gateway's API reference page (/docs) at `make generate`: Swagger
# UI's prebuilt browser bundle and stylesheet from the swagger-ui-dist package, which fetch
# nothing at run time but the document they are given (with validatorUrl null, see docs.js).
#
# It fetches exactly $PKG@$VERSION from the npm registry with `npm pack` into a temporary
# folder (npm checks the tarball against the registry's metadata), checks the tarball against
# the sha512 pinned here, extracts only the files the page loads, their license and notices,
# checks each against the sha256 pinned here, and writes them to swagger-ui/ beside this
# script, where apidocs.go embeds them. A changed upstream file fails here, loudly; the written
# bytes are the pinned ones, so a re-run changes nothing (make check holds them equal).
#
# To upgrade: set VERSION, run this script with PIN=1 (it prints the new hashes instead of
# checking them), read the diff of the license notices, paste the hashes below, and run the
# e2e test TestAPIReferenceInABrowser.
set -euo pipefail
cd "$(dirname "$0")"

PKG=swagger-ui-dist
VERSION=5.35.0
TARBALL_SHA512=sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ==
# file in the package, name under swagger-ui/, sha256
FILES=(
  "package/swagger-ui-bundle.js swagger-ui-bundle.js e6a898692f2d768e807c3ba4626068a69a2c5dd960dd6c76f3e4d3a3de180af2"
  "package/swagger-ui.css swagger-ui.css 5ed08757e53da3e026d6cbecc61fe5d43585c9560b302d534ad56692519a273d"
  "package/swagger-ui-bundle.js.LICENSE.txt swagger-ui-bundle.js.LICENSE.txt 37eb6e7e59aed57b2c1acf076574b818ea07b74265717e0bd67b59e0baf9abbb"
  "package/LICENSE LICENSE cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
  "package/NOTICE NOTICE 0d20d1adef18aee3f40dd258172155521ce702ac445cb5f7b7d60ed32dad2fb2"
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

mkdir -p "$tmp/x" swagger-ui
# Check every file before writing any, so a failed check leaves the vendored set as it was.
for entry in "${FILES[@]}"; do
  read -r src dst sum <<<"$entry"
  tar -xzf "$tmp/$tgz" -C "$tmp/x" "$src" || fail "$PKG@$VERSION has no $src"
  got=$(sha256sum "$tmp/x/$src" | cut -d' ' -f1)
  if [ "${PIN:-}" = 1 ]; then
    echo "  \"$src $dst $got\""
  elif [ "$got" != "$sum" ]; then
    fail "$src of $PKG@$VERSION is sha256 $got, pinned $sum"
  fi
done
for entry in "${FILES[@]}"; do
  read -r src dst _ <<<"$entry"
  # Rewrite only what differs, so a re-run leaves the files (and Go's build cache) alone.
  cmp -s "$tmp/x/$src" "swagger-ui/$dst" || install -m 0644 "$tmp/x/$src" "swagger-ui/$dst"
done
