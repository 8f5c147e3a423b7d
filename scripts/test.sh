#!/usr/bin/env bash
# The one test command (README): installs what the suite needs, then runs pytest.
# System packages (real Slurm daemons, munge, slurmrestd) need root on Debian 12 (Slurm 24.11:
# a Debian 13 chroot; Slurm 25.11 + pyslurm: built from SchedMD's source; both built once and cached
# outside the checkout);
# the test bed itself is started and stopped by the test fixtures, by pid.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    bash .ci/slurm-deps.sh
    bash .ci/slurm2411-deps.sh
    # pyslurm is compiled for the interpreter the tests run under (the venv's, made from python3)
    PYTHON=$( [ -x "${HPCTUI_VENV:-.venv}/bin/python" ] && echo "${HPCTUI_VENV:-.venv}/bin/python" || echo python3 ) \
        bash .ci/slurm2511-deps.sh
    bash .ci/k8s-deps.sh
    bash .ci/ssh-deps.sh
    bash .ci/prom-deps.sh
    bash .ci/alertmanager-deps.sh
    bash .ci/ceph-deps.sh
    bash .ci/browser-deps.sh
elif [ "${CI:-}" = true ]; then
    echo "scripts/test.sh: CI needs root to install the Slurm test bed" >&2; exit 1
fi

VENV=${HPCTUI_VENV:-.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check -e '.[test]'
exec "$VENV/bin/python" -m pytest "$@"
