#!/usr/bin/env bash
# Build what the live Slurm 25.11 test bed (tests/testbed/slurm2511) needs: Slurm 25.11 from
# SchedMD's source at a pinned release tag, and a real pyslurm compiled against it for the test
# interpreter ($PYTHON, default python3). Idempotent. Where the source comes from, first that works:
#   1. the build cached in $HPCTUI_SLURM2511 (default ~/.cache/hpctui-slurm2511), keyed by the tag
#      (a directory per tag, stamp file): reused at once, nothing is fetched or compiled;
#   2. $SLURM2511_GIT: a local git dir (git archive of the tag) or a URL (shallow clone of the tag);
#   3. the local bare mirror /work/.mirror/SchedMD+slurm/repo, if present;
#   4. https://github.com/SchedMD/slurm.git (git clone --depth 1 --branch <tag>).
# pyslurm comes from its PyPI sdist (pip, built against the prefix). Cold: ~10-15 min on 2 shared
# cores (measured in tests/testbed/slurm2511/build.sh's log lines); warm: a few dpkg checks.
# Called by scripts/test.sh (root only).
set -euo pipefail
bash "$(dirname "$0")/../tests/testbed/slurm2511/build.sh" >/dev/null
echo "slurm2511-deps: Slurm 25.11 + pyslurm ready"
