#!/usr/bin/env bash
# Tiny fake dynamic volume provisioner for the test cluster (started/stopped by
# cluster.sh, runs in its own process group, logs to <state>/logs/provisioner.log).
#
# For every Pending PVC whose storageClassName is one of $SC (blank-separated: the
# cluster's default StorageClass "standard" and "fixed", the class without volume
# expansion; provisioner "$PROVISIONER") it creates a hostPath PV named
# pvc-<pvc uid> of the claim's class, pre-bound to the claim (claimRef), with the
# requested size and access modes; the PV controller in kube-controller-manager then
# binds the pair. When the PVC is deleted the PV is deleted too (and on every (re)start
# Released PVs of ours are swept). Nothing is ever written to the hostPath (pods are
# fake).
#
# It is the resizer too, as an external resizer would be: a Bound PVC of ours whose
# spec.resources.requests.storage exceeds its status.capacity.storage (the API server
# admits such a patch only when the class has allowVolumeExpansion: true) gets its PV's
# spec.capacity and then its own status.capacity (the status subresource) set to the
# request. Quantities are compared in bytes (digits with an optional Ki..Ti suffix,
# what the operator writes; anything else counts as 0).
#
# Event driven: one `kubectl get pvc -A --watch -o json` stream through jq;
# the watch is restarted when the apiserver closes it.
set -uo pipefail
: "${KUBECONFIG:?}" "${KUBECTL:?}"
SC="${SC:-standard}"
PROVISIONER="${PROVISIONER:-rdc.local/fake-hostpath}"
LABEL="rdc.local/provisioned-by=fake-hostpath"
k() { "$KUBECTL" --request-timeout=20s "$@"; }
log() { echo "$(date -u +%FT%TZ) $*"; }

sweep() {
  k get pv -l "$LABEL" -o json 2>/dev/null |
    jq -r '.items[] | select(.status.phase=="Released" or .status.phase=="Failed") | .metadata.name' |
    while read -r pv; do log "sweep released $pv"; k delete pv "$pv" --wait=false >/dev/null 2>&1; done
}

provision() { # $1 = compact PVC json
  local ns name uid size modes mode pv sc
  ns=$(jq -r .metadata.namespace <<<"$1"); name=$(jq -r .metadata.name <<<"$1")
  sc=$(jq -r '.spec.storageClassName // ""' <<<"$1")
  uid=$(jq -r .metadata.uid <<<"$1"); size=$(jq -r '.spec.resources.requests.storage // "1Gi"' <<<"$1")
  modes=$(jq -c '.spec.accessModes // ["ReadWriteOnce"]' <<<"$1")
  mode=$(jq -r '.spec.volumeMode // "Filesystem"' <<<"$1")
  pv="pvc-$uid"
  k get pv "$pv" >/dev/null 2>&1 && return 0
  log "provision $pv for $ns/$name ($size)"
  k create -f - >/dev/null <<JSON || log "create $pv failed"
{"apiVersion":"v1","kind":"PersistentVolume",
 "metadata":{"name":"$pv","labels":{"rdc.local/provisioned-by":"fake-hostpath"},
   "annotations":{"pv.kubernetes.io/provisioned-by":"$PROVISIONER"}},
 "spec":{"capacity":{"storage":"$size"},"accessModes":$modes,"volumeMode":"$mode",
   "persistentVolumeReclaimPolicy":"Delete","storageClassName":"$sc",
   "hostPath":{"path":"/tmp/rdc-fake-pv/$pv","type":""},
   "claimRef":{"apiVersion":"v1","kind":"PersistentVolumeClaim","namespace":"$ns","name":"$name","uid":"$uid"}}}
JSON
}

resize() { # $1 = compact PVC json (Bound, its request above its capacity)
  local ns name size pv
  ns=$(jq -r .metadata.namespace <<<"$1"); name=$(jq -r .metadata.name <<<"$1")
  size=$(jq -r .spec.resources.requests.storage <<<"$1"); pv=$(jq -r '.spec.volumeName // ""' <<<"$1")
  [ -n "$pv" ] || return 0
  log "resize $pv of $ns/$name to $size"
  k patch pv "$pv" --type=merge -p "{\"spec\":{\"capacity\":{\"storage\":\"$size\"}}}" >/dev/null ||
    { log "resize: patch pv $pv failed"; return 0; }
  k -n "$ns" patch pvc "$name" --subresource=status --type=merge \
    -p "{\"status\":{\"capacity\":{\"storage\":\"$size\"}}}" >/dev/null ||
    log "resize: patch pvc $ns/$name status failed"
}

trap 'log "provisioner stopping"; exit 0' TERM INT
log "provisioner started (storageClasses=$SC provisioner=$PROVISIONER)"
while :; do
  sweep
  # --output-watch-events: {"type":"ADDED|MODIFIED|DELETED","object":{...}}
  k get pvc -A --watch --output-watch-events -o json --request-timeout=0 2>/dev/null |
    jq --unbuffered -c --arg sc "$SC" '
      def bytes: ((capture("^(?<n>[0-9]+)(?<u>[KMGT]i)?$") // null) as $m
        | if $m == null then 0
          else ($m.n | tonumber) * ({"": 1, "Ki": 1024, "Mi": 1048576, "Gi": 1073741824,
                                      "Ti": 1099511627776}[$m.u // ""]) end);
      select(.object.kind=="PersistentVolumeClaim")
      | select((.object.spec.storageClassName // "") as $c | $sc | split(" ") | index($c) != null)
      | if .type=="DELETED" then {op:"delete", pv:("pvc-"+.object.metadata.uid)}
        elif (.object.status.phase=="Pending" and ((.object.spec.volumeName // "")=="")) then {op:"add", pvc:.object}
        elif (.object.status.phase=="Bound"
              and ((.object.spec.resources.requests.storage // "0") | bytes)
                  > ((.object.status.capacity.storage // "0") | bytes)) then {op:"resize", pvc:.object}
        else empty end' |
    while read -r ev; do
      case "$(jq -r .op <<<"$ev")" in
        add) provision "$(jq -c .pvc <<<"$ev")" ;;
        resize) resize "$(jq -c .pvc <<<"$ev")" ;;
        delete) pv=$(jq -r .pv <<<"$ev"); log "delete $pv"; k delete pv "$pv" --ignore-not-found --wait=false >/dev/null 2>&1 ;;
      esac
    done
  log "watch ended; restarting in 1s"
  sleep 1
done
