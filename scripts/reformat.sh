#!/usr/bin/env bash
# The reformatting of issue 33, item 9, in one command (`npm run reformat`), for one commit with nothing else in it:
#   1. Biome's formatter on every source folder (biome.jsonc: 120 columns);
#   2. the comment lines still over 120 rewrapped (scripts/reflow-comments.mjs: comments only, never code);
#   3. Biome again, until it changes nothing: its first pass is not idempotent everywhere, and step 2 adds blocks.
# Then it checks the result: the same program as before (scripts/same-program.mjs, against a copy of the source
# folders taken first), the formatter's check, the line length and the linter. It changes files only, never
# git: review, build, commit.
set -euo pipefail
cd "$(dirname "$0")/.."
BIOME=node_modules/.bin/biome
FOLDERS=(src test benchmarks apps scripts bin)

before=$(mktemp -d)
trap 'rm -rf "$before"' EXIT
cp -r "${FOLDERS[@]}" "$before"/

"$BIOME" format --write
node scripts/reflow-comments.mjs
for pass in 1 2 3; do
  if "$BIOME" format >/dev/null 2>&1; then break; fi
  echo "biome format, pass $((pass + 1))"
  "$BIOME" format --write
done

node scripts/same-program.mjs "$before" .
"$BIOME" format
node scripts/check-line-length.mjs --except-literals
"$BIOME" lint --error-on-warnings
