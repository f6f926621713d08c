#!/usr/bin/env bash
# Builds the base image Deckhand's images start from, without pulling from any image registry:
# a Debian minbase root filesystem made with debootstrap from a Debian mirror (with the security
# updates applied), the official Node.js binary from the npm registry's `node-linux-<arch>`
# package, git, bubblewrap, curl, tini and CA certificates, a `deckhand` user (uid 1000) and its
# directories, imported with `podman import`.
#
#   bash deploy/images/build-base.sh            prints the image reference, building it if absent
#   bash deploy/images/build-base.sh --rebuild  builds it again (to take Debian's newest updates)
#
# The tag is a hash of this script and the machine's architecture, and everything the image
# holds is pinned here, so the tag names the content: a machine (or a CI run) builds it once and
# every later build of the app images reuses it. Change a version below and the tag changes.
#
# Needs root (debootstrap chroots and creates device nodes), debootstrap, strip (binutils), npm,
# and network access to the Debian mirror and the npm registry. Environment:
#   DECKHAND_CONTAINER_ENGINE      podman (default) or docker, with any global flags
#   DECKHAND_DEBIAN_MIRROR         default: the first URI of this machine's apt sources, else
#                                  http://deb.debian.org/debian
#   DECKHAND_DEBIAN_SECURITY_MIRROR default: http://deb.debian.org/debian-security
set -euo pipefail

NODE_VERSION="22.23.3"
DEBIAN_SUITE="bookworm"
# What the apps run (node), what batch steps and the agent need (git; curl, tar and gzip for
# codingAgent installs), the sandbox (bubblewrap), TLS roots, and an init that reaps the orphans
# of steps (tini). Everything else comes from --variant=minbase. Not slirp4netns: run as the
# image's user it cannot join a sandbox's network namespace (setns fails with EPERM), so a
# sandbox with network shares the container's, which holds no service but Deckhand's own.
PACKAGES="ca-certificates,curl,git,bubblewrap,tini"
DECKHAND_UID=1000

log() { echo "build-base: $*" >&2; }
fail() {
  log "$*"
  exit 1
}

rebuild=false
case "${1:-}" in
  "") ;;
  --rebuild) rebuild=true ;;
  *) fail "usage: $0 [--rebuild]" ;;
esac

engine="${DECKHAND_CONTAINER_ENGINE:-podman}"
read -r -a engine_command <<<"$engine"

case "$(uname -m)" in
  x86_64) node_arch="x64" ;;
  aarch64) node_arch="arm64" ;;
  *) fail "no Node.js package for $(uname -m); the images are built for x86_64 and aarch64" ;;
esac

script_hash="$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)"
image="localhost/deckhand/base:${DEBIAN_SUITE}-node${NODE_VERSION}-${node_arch}-${script_hash}"

if [[ "$rebuild" == false ]] && "${engine_command[@]}" image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi

[[ "$(id -u)" == 0 ]] || fail "run as root: debootstrap needs it (then the image is in root's storage)"
PATH="$PATH:/usr/local/sbin:/usr/sbin:/sbin"
command -v debootstrap >/dev/null || fail "debootstrap is missing: apt-get install debootstrap"
command -v strip >/dev/null || fail "strip is missing: apt-get install binutils"
command -v npm >/dev/null || fail "npm is missing: sh scripts/toolchain.sh puts it on PATH"

# One build per image at a time on this machine: a second run waits, then finds the image.
lock="/var/tmp/deckhand-base-${script_hash}.lock"
exec 9>"$lock"
flock 9
if [[ "$rebuild" == false ]] && "${engine_command[@]}" image inspect "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi

debian_mirror() {
  local sources
  for sources in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [[ -f "$sources" ]] || continue
    sed -n -e 's/^URIs: *\([^ ]*\).*/\1/p' -e 's/^deb  *\(\[[^]]*\] *\)\{0,1\}\([^ ]*\).*/\2/p' "$sources" |
      grep -v -- '-security' | head -1
  done | head -1
}
mirror="${DECKHAND_DEBIAN_MIRROR:-$(debian_mirror)}"
mirror="${mirror:-http://deb.debian.org/debian}"
security_mirror="${DECKHAND_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

work="$(mktemp -d /var/tmp/deckhand-base.XXXXXX)"
rootfs="$work/rootfs"
cleanup() {
  # debootstrap leaves nothing mounted on success; after a failure it may have.
  for mounted in proc sys dev/pts dev; do
    mountpoint -q "$rootfs/$mounted" 2>/dev/null && umount -l "$rootfs/$mounted"
  done
  rm -rf "$work"
}
trap cleanup EXIT

started=$(date +%s)
log "debootstrap $DEBIAN_SUITE ($PACKAGES) from $mirror"
debootstrap --variant=minbase --include="$PACKAGES" "$DEBIAN_SUITE" "$rootfs" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || {
  tail -30 "$work/debootstrap.log" >&2
  fail "debootstrap failed (its log is above)"
}

# Documentation, manual pages and translations are a third of a minbase system; keep them out of
# this image and of anything installed on top of it later (licences stay).
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/deckhand-slim" <<'EOF'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-include=/usr/share/locale/locale.alias
path-exclude=/usr/share/lintian/*
EOF

# The suite's point release plus its updates and security fixes, which debootstrap alone lacks.
cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $mirror $DEBIAN_SUITE main
deb $mirror $DEBIAN_SUITE-updates main
deb $security_mirror $DEBIAN_SUITE-security main
EOF
cp /etc/resolv.conf "$rootfs/etc/resolv.conf"
log "applying $DEBIAN_SUITE-updates and $DEBIAN_SUITE-security"
chroot "$rootfs" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
  sh -c 'apt-get update -qq && apt-get -y -qq -o Dpkg::Options::=--force-confold upgrade && apt-get clean' \
  >"$work/upgrade.log" 2>&1 || {
  tail -30 "$work/upgrade.log" >&2
  fail "applying the updates failed (the log is above)"
}
: >"$rootfs/etc/resolv.conf"

find "$rootfs/usr/share/doc" -mindepth 1 -not -name copyright -not -type d -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
rm -rf "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/lintian
find "$rootfs/usr/share/locale" -mindepth 1 -maxdepth 1 -not -name locale.alias -exec rm -rf {} +
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
rm -rf "$rootfs"/var/log/* "$rootfs"/tmp/* "$rootfs"/var/tmp/*

log "node $NODE_VERSION (node-linux-$node_arch from the npm registry)"
# npm checks the tarball against the registry's integrity hash.
(cd "$work" && npm pack --silent "node-linux-${node_arch}@${NODE_VERSION}" >/dev/null)
tar -xzf "$work/node-linux-${node_arch}-${NODE_VERSION}.tgz" -C "$work" package/bin/node package/LICENSE
# The official binary carries debug information the image has no use for (about 18 MB).
strip "$work/package/bin/node"
install -m 0755 "$work/package/bin/node" "$rootfs/usr/local/bin/node"
install -D -m 0644 "$work/package/LICENSE" "$rootfs/usr/local/share/doc/node/LICENSE"
chroot "$rootfs" /usr/local/bin/node --version >/dev/null || fail "node does not run in the root filesystem"

# The user every Deckhand process runs as, with a fixed uid so volumes and Kubernetes'
# runAsUser agree; /data is the data directory, /workspace the workspace agent's root.
chroot "$rootfs" groupadd --gid "$DECKHAND_UID" deckhand
chroot "$rootfs" useradd --uid "$DECKHAND_UID" --gid "$DECKHAND_UID" --create-home \
  --home-dir /home/deckhand --shell /bin/bash deckhand
install -d -m 0750 -o "$DECKHAND_UID" -g "$DECKHAND_UID" "$rootfs/data" "$rootfs/workspace"

log "importing $image"
tar --numeric-owner --xattrs -C "$rootfs" -c . |
  "${engine_command[@]}" import \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV LANG=C.UTF-8" \
    --change 'CMD ["/bin/bash"]' \
    --message "deckhand base: debian $DEBIAN_SUITE minbase, $PACKAGES, node $NODE_VERSION" \
    - "$image" >/dev/null
log "built $image in $(($(date +%s) - started)) s"
echo "$image"
