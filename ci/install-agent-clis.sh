#!/usr/bin/env bash
# Installs the agent CLIs gavel's real-CLI tests drive, at pinned versions,
# from the npm registry into a cache folder outside the clone:
#
#   ${GAVEL_AGENT_CLIS:-$HOME/.cache/gavel-agent-clis}/<name>@<version>/
#
# Each one is installed with `npm install --prefix <that folder>`, all in
# parallel; one already installed (marker file present) is skipped. Any failed
# install makes the script exit non-zero, naming it and showing its log tail.
# It also pre-installs `@opencode-ai/plugin` at opencode's version: opencode
# otherwise runs `npm install @opencode-ai/plugin` into its config folder on
# every fresh HOME (reaching for the registry); gavel links this copy into the
# private home it gives each opencode run (see crates/gavel-seats/src/cli).
#
# On success it prints one `name=path` line per binary (and `opencode-plugin=`
# for the plugin's node_modules folder), for tests and `gavel doctor`.
set -euo pipefail

DIR="${GAVEL_AGENT_CLIS:-$HOME/.cache/gavel-agent-clis}"

# name  package  version  binary (under node_modules/.bin; "-" for none)
PINS=(
  "claude @anthropic-ai/claude-code 2.1.197 claude"
  "codex @openai/codex 0.171.0 codex"
  "opencode opencode-ai 1.18.33 opencode"
  "gemini @google/gemini-cli 0.61.0 gemini"
  "opencode-plugin @opencode-ai/plugin 1.18.33 -"
)

command -v npm >/dev/null || { echo "install-agent-clis: npm is required (install nodejs)" >&2; exit 1; }
mkdir -p "$DIR"

MARKER=.gavel-installed

install_one() {
  local name=$1 pkg=$2 version=$3 prefix="$DIR/$1@$3"
  if [[ -f "$prefix/$MARKER" ]]; then
    echo "install-agent-clis: $name@$version already installed" >&2
    return 0
  fi
  rm -rf "$prefix"
  mkdir -p "$prefix"
  echo "install-agent-clis: installing $pkg@$version" >&2
  if npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error "$pkg@$version" \
      >"$prefix.log" 2>&1; then
    touch "$prefix/$MARKER"
    rm -f "$prefix.log"
  else
    echo "install-agent-clis: FAILED to install $pkg@$version; last lines of $prefix.log:" >&2
    tail -n 30 "$prefix.log" >&2 || true
    rm -rf "$prefix"
    return 1
  fi
}

pids=()
names=()
for pin in "${PINS[@]}"; do
  read -r name pkg version _bin <<<"$pin"
  install_one "$name" "$pkg" "$version" &
  pids+=("$!")
  names+=("$name@$version")
done

failed=()
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    failed+=("${names[$i]}")
  fi
done
if ((${#failed[@]})); then
  echo "install-agent-clis: failed: ${failed[*]}" >&2
  exit 1
fi

for pin in "${PINS[@]}"; do
  read -r name _pkg version bin <<<"$pin"
  prefix="$DIR/$name@$version"
  if [[ "$bin" == "-" ]]; then
    echo "$name=$prefix/node_modules"
    continue
  fi
  path="$prefix/node_modules/.bin/$bin"
  if [[ ! -x "$path" ]]; then
    echo "install-agent-clis: $name installed but $path is missing" >&2
    rm -f "$prefix/$MARKER"
    exit 1
  fi
  echo "$name=$path"
done
