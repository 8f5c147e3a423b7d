#!/usr/bin/env bash
# Mutation score of the data layer (docs/development.md): mutmut plants small bugs in
# hpctui/findings/health.py, hpctui/model/ and the source parsers ([tool.mutmut] in pyproject.toml)
# and runs the unit tests against each; a surviving mutant is a bug the suite would miss.
# Slow (minutes per module), so not part of scripts/test.sh.
#
#   scripts/mutation.sh                       # every configured module
#   scripts/mutation.sh hpctui.findings.health         # one module (a mutmut name glob prefix)
#   scripts/mutation.sh hpctui.sources.slurm.parse.states hpctui.model.node
#   scripts/mutation.sh --survivors           # ... and list the surviving mutants
#   MUTMUT_CHILDREN=2 scripts/mutation.sh ... # parallel workers (default: all cores)
#
# Prints the score (killed / all) per run and lists the survivors; `mutmut show <name>` shows one.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${HPCTUI_VENV:-.venv}
[[ $VENV == /* ]] || VENV=$PWD/$VENV   # HPCTUI_VENV may be absolute (a shared venv)
[ -x "$VENV/bin/mutmut" ] || { echo "mutmut missing: $VENV/bin/pip install -e '.[test]'" >&2; exit 1; }
export PATH="$VENV/bin:$PATH"

globs=()
for m in "$@"; do [[ $m == --* ]] || globs+=("$m.*"); done
# mutmut only re-tests mutants it has no verdict for unless they are named: name them all, so a
# survivor of an older run is tried again against today's tests
[ ${#globs[@]} -gt 0 ] || globs=("hpctui.*")
args=()
[ -n "${MUTMUT_CHILDREN:-}" ] && args+=(--max-children "$MUTMUT_CHILDREN")

mutmut run ${args[@]+"${args[@]}"} ${globs[@]+"${globs[@]}"} || true   # exits non-zero when mutants survive
exec "$VENV/bin/python" bench/mutation_score.py "$@"
