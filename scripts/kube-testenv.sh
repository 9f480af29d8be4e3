#!/usr/bin/env bash
# Builds the real Kubernetes control plane that tests/kube_real.rs runs `netcheck launch` against:
#   kube-apiserver, kube-controller-manager, kube-scheduler, kubectl v1.34.4, etcd v3.6.8, kwok v0.8.0,
# from the Go module proxy alone, into target/kube-testenv/bin (ignored by git, like all of target/).
# Binaries already there are kept (FORCE=1 rebuilds). Needs Go >= 1.26 (kwok's go.mod asks for it).
# Usage: scripts/kube-testenv.sh [build|check]   check: exit 0 if every binary is there, else 1.
# Env: KUBE_TESTENV_DIR (default <repo>/target/kube-testenv)
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
DIR=${KUBE_TESTENV_DIR:-$REPO/target/kube-testenv}
BIN=$DIR/bin
K8S=1.34.4 STAGING=0.34.4 ETCD=3.6.8 KWOK=0.8.0
TOOLS="kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok"
ASSETS="pki/ca.crt pki/apiserver.crt pki/apiserver.key pki/sa.key pki/sa.pub kwok/logs-crd.yaml"
export PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-buildvcs=false

say() { echo "[kube-testenv $(date -u +%T)] $*" >&2; }
missing() {
  local t; for t in $TOOLS; do [ -x "$BIN/$t" ] || echo "bin/$t"; done
  for t in $ASSETS; do [ -f "$DIR/$t" ] || echo "$t"; done
}
need() { [ "${FORCE:-0}" = 1 ] || [ ! -x "$BIN/$1" ]; }
timed() { local name=$1 s; shift; s=$(date +%s); "$@"; say "built $name in $(( $(date +%s) - s )) s"; }

build() {
  command -v go >/dev/null || { say "error: go not found (Go >= 1.26 builds the test control plane)"; exit 3; }
  mkdir -p "$BIN" "$DIR/src/k8s" "$DIR/src/etcd"
  # k8s.io/kubernetes as a dependency: each staging module replaced by its published v0.X.Y
  # (sample-cli-plugin and sample-controller are left out: the proxy has no such versions).
  cd "$DIR/src/k8s"
  {
    printf 'module netcheck-kube-testenv/k8s\n\ngo 1.24.0\n\nrequire k8s.io/kubernetes v%s\n\nreplace (\n' "$K8S"
    for m in api apiextensions-apiserver apimachinery apiserver cli-runtime client-go cloud-provider \
      cluster-bootstrap code-generator component-base component-helpers controller-manager cri-api \
      cri-client csi-translation-lib dynamic-resource-allocation endpointslice externaljwt kms \
      kube-aggregator kube-controller-manager kube-proxy kube-scheduler kubectl kubelet metrics \
      mount-utils pod-security-admission sample-apiserver; do
      printf '\tk8s.io/%s => k8s.io/%s v%s\n' "$m" "$m" "$STAGING"
    done
    printf ')\n'
  } > go.mod
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
    printf ')\n'
  } > tools.go
  [ -f go.sum ] || go mod tidy
  # /version must report the real version: clients (kubectl, kube-rs) read it.
  local v=v$K8S ldf="-s -w"
  for kv in component-base/version.gitVersion=$v component-base/version.gitMajor=1 component-base/version.gitMinor=34 \
    component-base/version.gitTreeState=clean client-go/pkg/version.gitVersion=$v client-go/pkg/version.gitMajor=1 \
    client-go/pkg/version.gitMinor=34; do ldf+=" -X k8s.io/$kv"; done
  for c in kube-apiserver kube-controller-manager kube-scheduler kubectl; do
    if need "$c"; then timed "$c" go build -trimpath -ldflags "$ldf" -o "$BIN/$c" "k8s.io/kubernetes/cmd/$c"; fi
  done
  # etcd: the server module is package main with replace lines, so `go install @v` is refused; a wrapper module builds it.
  cd "$DIR/src/etcd"
  printf 'module netcheck-kube-testenv/etcd\n\ngo 1.24.0\n\nrequire go.etcd.io/etcd/server/v3 v%s\n' "$ETCD" > go.mod
  printf '//go:build tools\n\npackage tools\n\nimport _ "go.etcd.io/etcd/server/v3"\n' > tools.go
  [ -f go.sum ] || go mod tidy
  if need etcd; then timed etcd go build -trimpath -ldflags "-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3; fi
  if need kwok; then timed kwok env GOBIN="$BIN" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK"; fi
  assets
  local left; left=$(missing)
  [ -z "$left" ] || { say "error: not built: $left"; exit 1; }
  say "ready: $BIN"
}

# What the control plane needs besides binaries, made once: a CA and the API server's certificate
# (IP SAN 127.0.0.1), the service-account signing key, and kwok's Logs CRD (from the kwok module:
# kwok serves a pod's log from the file a Logs object names).
assets() {
  command -v openssl >/dev/null || { say "error: openssl not found (it makes the test CA)"; exit 3; }
  mkdir -p "$DIR/pki" "$DIR/kwok"
  cd "$DIR/pki"
  if [ ! -f ca.crt ]; then
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 -subj /CN=netcheck-kube-testenv-ca \
      -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign,digitalSignature 2>/dev/null
  fi
  if [ ! -f apiserver.crt ]; then
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj /CN=kube-apiserver 2>/dev/null
    printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes.default.svc\n' > ext.cnf
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out apiserver.crt -days 3650 -extfile ext.cnf 2>/dev/null
  fi
  [ -f sa.key ] || { openssl genrsa -out sa.key 2048 2>/dev/null; openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null; }
  local mod
  mod=$(cd / && go mod download -json "sigs.k8s.io/kwok@v$KWOK" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  cp "$mod/kustomize/crd/bases/kwok.x-k8s.io_logs.yaml" "$DIR/kwok/logs-crd.yaml"
  chmod u+w "$DIR/kwok/logs-crd.yaml"
}

case "${1:-build}" in
  build) build ;;
  check) [ -z "$(missing)" ] ;;
  *) echo "usage: $0 [build|check]" >&2; exit 2 ;;
esac
