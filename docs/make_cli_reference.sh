#!/usr/bin/env bash
# Regenerate docs/cli.md from the CLI's own --help (run inside the venv).
set -euo pipefail
cd "$(dirname "$0")"
{
  echo '# CLI reference'
  echo
  echo 'Generated from `diffzoo --help` by `docs/make_cli_reference.sh`.'
  for c in "" "run" "sweep" "train" "reproduce" "predict" "generate" "list" "plugins" "plugins check" "report" "report paper" "report reproduce" "data" "data build" "data info" "data find" "data stats" "data label-pairs" \
         "leaderboard" "leaderboard list" "leaderboard show" "leaderboard validate" "leaderboard verify" "leaderboard add" \
         "leaderboard freeze" "leaderboard versions" "leaderboard diff" "leaderboard publish"; do
    echo; echo "## diffzoo $c"; echo; echo '```'
    # shellcheck disable=SC2086
    COLUMNS=100 diffzoo $c --help 2>&1 | sed 's/[[:space:]]*$//'
    echo '```'
  done
} > cli.md
