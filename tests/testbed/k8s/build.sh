#!/bin/bash
# Build the Kubernetes test peer: kube-apiserver v1.20.2 from Debian bookworm's own `kubernetes`
# source package with Debian's Go, plus Debian's etcd 3.4 (measured recipe, see README "Kubernetes").
# Idempotent: each step is skipped when its output exists. Everything lives under $HPCTUI_K8SLAB
# (default ~/.cache/hpctui-k8slab), outside the checkout, so reruns reuse the Go build cache:
# cold ~4 min on 2 cores (1.2 GB GOCACHE), warm: nothing to do.
# Prints the path of the kube-apiserver binary on its last line.
set -euo pipefail
W=${HPCTUI_K8SLAB:-$HOME/.cache/hpctui-k8slab}
BIN=$W/bin
GOPATH=$W/gopath
KSRC=$GOPATH/src/k8s.io/kubernetes
mkdir -p "$W" "$BIN"
log() { echo "[$(date +%T)] k8s-build: $*" >&2; }

# 1. Debian packages: Go 1.19, etcd 3.4, openssl; reflect2 1.0.2 source (Kubernetes 1.20 vendors
#    reflect2 1.0.1, which segfaults when built with Go >= 1.18).
REFLECT2=/usr/share/gocode/src/github.com/modern-go/reflect2
if ! command -v go >/dev/null || ! command -v etcd >/dev/null || ! command -v openssl >/dev/null || [ ! -f $REFLECT2/go_above_118.go ]; then
  log "apt: installing golang-go etcd-server openssl golang-github-modern-go-reflect2-dev"
  [ -x /usr/sbin/policy-rc.d ] || { printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d; }
  for try in 1 2 3 4 5 6 7 8 9 10; do   # another apt may hold the lock for a while
    if apt-get -o DPkg::Lock::Timeout=120 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
        install -y -qq --no-install-recommends golang-go etcd-server openssl ca-certificates golang-github-modern-go-reflect2-dev >/dev/null
    then break; fi
    [ $try = 10 ] && exit 1; sleep 15
  done
fi

if [ -x $BIN/kube-apiserver ] && [ -f $KSRC/vendor/github.com/modern-go/reflect2/go_above_118.go ]; then
  echo "$BIN/kube-apiserver"; exit 0
fi

# 2. Kubernetes source with vendor/ via a private apt state dir with deb-src enabled.
if [ ! -f "$KSRC/cmd/kube-apiserver/apiserver.go" ]; then
  A=$W/apt; mkdir -p $A/parts $A/lists/partial $A/cache/archives/partial $W/debsrc
  sed -e 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources > $A/parts/src.sources
  APTO="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$A/parts -o Dir::State::Lists=$A/lists -o Dir::Cache=$A/cache"
  log "fetching Debian's kubernetes source package"
  # shellcheck disable=SC2086
  apt-get $APTO update -qq
  # shellcheck disable=SC2086
  (cd $W/debsrc && apt-get $APTO source --download-only kubernetes >/dev/null 2>&1)
  mkdir -p "$(dirname "$KSRC")"
  rm -rf "$(dirname "$KSRC")"/kubernetes-* "$KSRC"
  tar xzf "$(ls $W/debsrc/kubernetes_*.orig.tar.gz | tail -1)" -C "$(dirname "$KSRC")"
  mv "$(dirname "$KSRC")"/kubernetes-1.* "$KSRC"
fi
if [ ! -f $KSRC/vendor/github.com/modern-go/reflect2/go_above_118.go ]; then
  log "replacing vendored reflect2 1.0.1 with Debian's 1.0.2"
  rm -f $KSRC/vendor/github.com/modern-go/reflect2/*.go $KSRC/vendor/github.com/modern-go/reflect2/*.s
  cp $REFLECT2/*.go $KSRC/vendor/github.com/modern-go/reflect2/
  rm -f $BIN/kube-apiserver
fi

# 3. Build (GOPATH mode + vendor/, as Kubernetes 1.20's own build); generate pkg/generated/openapi first.
export GOCACHE=${GOCACHE:-$W/gocache}
log "building kube-apiserver 1.20.2 with $(go version | cut -d' ' -f3), GOCACHE=$GOCACHE"
s=$(date +%s)
(
  cd "$KSRC"
  export GOPATH GO111MODULE=off GOFLAGS=-trimpath CGO_ENABLED=0 GOROOT="$(go env GOROOT)"
  if [ ! -f pkg/generated/openapi/zz_generated.openapi.go ]; then
    nice -n 10 go build -o $BIN/openapi-gen ./vendor/k8s.io/kube-openapi/cmd/openapi-gen
    DIRS=$(find -H . -not \( \( -path './_*' -o -path './.*' -o -path ./vendor \) -prune \) -type f -name '*.go' \
      | sed 's|^./staging/src|vendor|' | xargs grep -l '^// *+k8s:' | xargs grep -l '+k8s:openapi-gen=' \
      | grep -v -E '^vendor/k8s.io/(code-generator|sample-apiserver)/' | xargs -n1 dirname | LC_ALL=C sort -u \
      | sed 's|^|k8s.io/kubernetes/|' | paste -sd,)
    nice -n 10 $BIN/openapi-gen --logtostderr -i "$DIRS" -p k8s.io/kubernetes/pkg/generated/openapi \
      -O zz_generated.openapi -h vendor/k8s.io/code-generator/hack/boilerplate.go.txt -r $W/openapi_violations.report 2>/dev/null
  fi
  V=k8s.io/kubernetes/vendor/k8s.io
  nice -n 10 go build -o $BIN/kube-apiserver.tmp \
    -ldflags "-s -w -X $V/component-base/version.gitVersion=v1.20.2 -X $V/component-base/version.gitMajor=1 -X $V/component-base/version.gitMinor=20 -X $V/component-base/version.gitTreeState=clean -X $V/client-go/pkg/version.gitVersion=v1.20.2 -X $V/client-go/pkg/version.gitMajor=1 -X $V/client-go/pkg/version.gitMinor=20" \
    ./cmd/kube-apiserver
  mv $BIN/kube-apiserver.tmp $BIN/kube-apiserver
)
log "build took $(( $(date +%s) - s ))s"
echo "$BIN/kube-apiserver"
