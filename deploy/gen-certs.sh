#!/usr/bin/env bash
# Make a self-signed CA and a serving certificate for the rdc-operator's admission
# webhooks (openssl CLI), and a kustomize overlay that installs the operator with them:
# the Secret rediscluster-operator-webhook-cert (type kubernetes.io/tls) and the CA in the
# caBundle of both webhook configurations and of the CRD's conversion webhook (/convert).
#
#   deploy/gen-certs.sh                      # writes deploy/overlays/self-signed/
#   kubectl apply -k deploy/overlays/self-signed
#
#   deploy/gen-certs.sh --apply              # the same, and applies it
#   deploy/gen-certs.sh -n my-ns -o /tmp/x   # another namespace, another directory
#   deploy/gen-certs.sh --certs-only --ip 127.0.0.1 -o DIR
#                                            # only ca.crt, tls.crt, tls.key (local tests)
#
# The certificate names the webhook Service in every form the API server may use:
# <svc>, <svc>.<ns>, <svc>.<ns>.svc, <svc>.<ns>.svc.cluster.local (plus --dns/--ip extras).
# The output directory holds private keys: it gets a .gitignore that ignores everything.
# Rotation: run it again and re-apply; webhookd rereads the mounted files when the kubelet
# updates them (no restart). For automatic rotation use overlays/cert-manager instead.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ns=rediscluster-operator-system
svc=rediscluster-operator-webhook
out=$here/overlays/self-signed
days=365
apply=0
certs_only=0
extra_dns=()
extra_ip=()

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'
    cat <<EOF
options:
  -n, --namespace NS   namespace of the operator (default $ns)
  -s, --service NAME   webhook Service (default $svc)
  -o, --out DIR        output directory (default deploy/overlays/self-signed)
  -d, --days N         validity of the CA and the certificate (default $days)
      --dns NAME       an extra DNS name in the certificate (repeatable)
      --ip ADDR        an extra IP address in the certificate (repeatable)
      --certs-only     write only the certificates, no overlay
      --apply          kubectl apply -k the overlay afterwards
EOF
}

die() { echo "gen-certs.sh: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case $1 in
    -n | --namespace) ns=${2:?}; shift 2 ;;
    -s | --service) svc=${2:?}; shift 2 ;;
    -o | --out) out=${2:?}; shift 2 ;;
    -d | --days) days=${2:?}; shift 2 ;;
    --dns) extra_dns+=("${2:?}"); shift 2 ;;
    --ip) extra_ip+=("${2:?}"); shift 2 ;;
    --certs-only) certs_only=1; shift ;;
    --apply) apply=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) die "unknown argument \"$1\" (see --help)" ;;
    esac
done
[[ $days =~ ^[0-9]+$ ]] && [ "$days" -gt 0 ] || die "--days must be a positive number, have \"$days\""
[[ $ns =~ ^[a-z0-9]([-a-z0-9]*[a-z0-9])?$ ]] || die "--namespace \"$ns\" is not a namespace name"
[[ $svc =~ ^[a-z]([-a-z0-9]*[a-z0-9])?$ ]] || die "--service \"$svc\" is not a Service name"
command -v openssl >/dev/null || die "openssl is required"
[ "$certs_only" = 1 ] && [ "$apply" = 1 ] && die "--apply needs the overlay (drop --certs-only)"

mkdir -p "$out"
chmod 700 "$out"
printf '*\n' >"$out/.gitignore"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
umask 077

san="DNS:$svc,DNS:$svc.$ns,DNS:$svc.$ns.svc,DNS:$svc.$ns.svc.cluster.local"
for d in "${extra_dns[@]+"${extra_dns[@]}"}"; do san="$san,DNS:$d"; done
for i in "${extra_ip[@]+"${extra_ip[@]}"}"; do san="$san,IP:$i"; done

# The CA: P-256, signs certificates only.
openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
    -keyout "$work/ca.key" -out "$work/ca.crt" -days "$days" -sha256 \
    -subj "/CN=rediscluster-operator-webhook-ca" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null \
    || die "openssl could not make the CA"

# The serving certificate, signed by the CA.
openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:P-256 \
    -keyout "$work/tls.key" -out "$work/tls.csr" -subj "/CN=$svc.$ns.svc" 2>/dev/null \
    || die "openssl could not make the certificate request"
cat >"$work/ext.cnf" <<EOF
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=$san
EOF
openssl x509 -req -in "$work/tls.csr" -CA "$work/ca.crt" -CAkey "$work/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days "$days" -sha256 \
    -extfile "$work/ext.cnf" -out "$work/tls.crt" 2>/dev/null \
    || die "openssl could not sign the certificate"
openssl verify -CAfile "$work/ca.crt" "$work/tls.crt" >/dev/null || die "the new certificate does not verify"

# Into place; the CA key is kept (0600) so that the operator can be re-issued a
# certificate under the same caBundle.
for f in ca.crt ca.key tls.crt tls.key; do
    install -m 600 "$work/$f" "$out/$f"
done
chmod 644 "$out/ca.crt" "$out/tls.crt"
echo "gen-certs.sh: wrote $out/{ca.crt,ca.key,tls.crt,tls.key} for $san (valid $days days)" >&2
[ "$certs_only" = 1 ] && exit 0

ca_b64=$(base64 -w0 <"$out/ca.crt")
base=$(realpath --relative-to="$out" "$here/base")
cat >"$out/kustomization.yaml" <<EOF
# Generated by deploy/gen-certs.sh on $(date -u +%Y-%m-%dT%H:%M:%SZ); holds private keys, do not commit.
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: $ns
resources:
- $base
secretGenerator:
- name: rediscluster-operator-webhook-cert
  type: kubernetes.io/tls
  files:
  - tls.crt
  - tls.key
  - ca.crt
  options:
    disableNameSuffixHash: true
patches:
- target:
    kind: MutatingWebhookConfiguration
    name: rediscluster-operator-mutating
  patch: |-
    - op: add
      path: /webhooks/0/clientConfig/caBundle
      value: $ca_b64
- target:
    kind: ValidatingWebhookConfiguration
    name: rediscluster-operator-validating
  patch: |-
    - op: add
      path: /webhooks/0/clientConfig/caBundle
      value: $ca_b64
- target:
    kind: CustomResourceDefinition
    name: redisclusters.cache.example.com
  patch: |-
    - op: add
      path: /spec/conversion/webhook/clientConfig/caBundle
      value: $ca_b64
EOF
echo "gen-certs.sh: wrote $out/kustomization.yaml; install with: kubectl apply -k $out" >&2
if [ "$apply" = 1 ]; then
    kubectl apply -k "$out"
fi
