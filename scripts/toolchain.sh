#!/bin/sh
# Runs a command with a Node.js >= 22.18 and pnpm on PATH, installing both into
# ./.toolchain from the npm registry when the machine lacks them. This is what lets the
# README's commands work on a fresh machine that only has an older Node and npm.
set -eu

# Turbo would otherwise try to send telemetry from every machine, CI included.
TURBO_TELEMETRY_DISABLED=1
DO_NOT_TRACK=1
export TURBO_TELEMETRY_DISABLED DO_NOT_TRACK

root=$(CDPATH= cd -- "$(dirname -- "$0")/.." && pwd)
toolchain="$root/.toolchain"
node_spec="node@22"
pnpm_version=$(sed -n 's/.*"packageManager": *"pnpm@\([^"]*\)".*/\1/p' "$root/package.json")

node_is_recent() {
  command -v node >/dev/null 2>&1 || return 1
  node -e '
    const [major, minor] = process.versions.node.split(".").map(Number);
    process.exit(major > 22 || (major === 22 && minor >= 18) ? 0 : 1);
  ' 2>/dev/null
}

pnpm_matches() {
  command -v pnpm >/dev/null 2>&1 || return 1
  [ "$(pnpm --version 2>/dev/null)" = "$pnpm_version" ]
}

if [ -x "$toolchain/node_modules/.bin/node" ]; then
  PATH="$toolchain/node_modules/.bin:$PATH"
  export PATH
fi

if ! node_is_recent || ! pnpm_matches; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "deckhand: need Node.js >= 22.18 and pnpm $pnpm_version, or npm to install them" >&2
    exit 1
  fi
  packages="pnpm@$pnpm_version"
  node_is_recent || packages="$node_spec $packages"
  echo "deckhand: installing $packages into .toolchain (one time)" >&2
  mkdir -p "$toolchain"
  [ -f "$toolchain/package.json" ] || echo '{"private":true}' > "$toolchain/package.json"
  npm install --prefix "$toolchain" --no-audit --no-fund --loglevel=error $packages >&2
  PATH="$toolchain/node_modules/.bin:$PATH"
  export PATH
fi

# Dependencies: install when missing or when the lockfile changed since the last install.
stamp="$root/node_modules/.deckhand-install-stamp"
if [ ! -f "$stamp" ] || [ "$root/pnpm-lock.yaml" -nt "$stamp" ] || [ "$root/package.json" -nt "$stamp" ]; then
  if [ -n "${CI:-}" ]; then
    (cd "$root" && pnpm install --frozen-lockfile --reporter=append-only) >&2
  else
    (cd "$root" && pnpm install --reporter=append-only) >&2
  fi
  touch "$stamp"
fi

exec "$@"
