#!/usr/bin/env bash
# Install and build what the live Kubernetes test bed (tests/testbed/k8s) needs: Debian's Go,
# etcd 3.4 and openssl, then kube-apiserver v1.20.2 from Debian's own source package.
# Idempotent. Cold: ~25 s apt + ~4 min build on 2 cores (1.2 GB Go build cache, kept in
# $HPCTUI_K8SLAB, default ~/.cache/hpctui-k8slab, outside the checkout); warm: a few seconds.
set -euo pipefail
bash "$(dirname "$0")/../tests/testbed/k8s/build.sh" >/dev/null
echo "k8s-deps: kube-apiserver ready"
