#!/usr/bin/env python3
"""Write the fuzz seed corpora: tests/fuzz/corpus/<target>/<name>, small real inputs.

    python3 tests/fuzz/corpus/make-seeds.py     # rewrites kube_config/, watch/, admission/, conversion/

The seeds are committed; this script is how they were made (rerun it after changing it,
and commit both). Files named regress-* are inputs a fuzzer once failed on, kept as found
(the script leaves them alone). Each target's input format is in its tests/fuzz/fuzz_<target>.c:
  kube_config  a kubeconfig file as is (YAML, or JSON which is YAML);
  watch        byte 0 = line limit (16 + 8*b), byte 1 = number of chunk sizes (mod 16),
               then that many chunk sizes, then the watch stream;
  admission    byte 0 = mode (& 3: 0 raw review, 1 CREATE spec, 2 UPDATE old spec,
               3 UPDATE new spec; | 4: the mutating webhook), then the payload.
"""
import base64
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))

# A real self-signed P-256 certificate and its key (openssl req -x509 -newkey ec ...),
# so that the PEM checks pass and the seeds reach what comes after them.
PEM_CERT = b"""-----BEGIN CERTIFICATE-----
MIIBczCCARmgAwIBAgIUOmKo/m6mvU26eHW0Ij5TyjEZw3UwCgYIKoZIzj0EAwIw
DzENMAsGA1UEAwwEc2VlZDAeFw0yNjEyMDExNTEwNDBaFw0zNjExMjgxNTEwNDBa
MA8xDTALBgNVBAMMBHNlZWQwWTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAR64/oz
ky6GC+EP4FIHdg0wptypekkCnE2lc5jKTidi28XLb1uQO/q6Vfo2Ayfn6R1cCh4A
EhEB6xDr6nK7YdSco1MwUTAdBgNVHQ4EFgQUSByk5qQhk5WajqmFDQ8Jmr1RZ/Mw
HwYDVR0jBBgwFoAUSByk5qQhk5WajqmFDQ8Jmr1RZ/MwDwYDVR0TAQH/BAUwAwEB
/zAKBggqhkjOPQQDAgNIADBFAiB1BCSKIOw13uzV4GfI+Eh8YGjHld68sD90BJFk
8nrDxgIhAOaTgZBuB8yVPyHlZIPl+X7VhaTCkfahQLalf1k5/hm3
-----END CERTIFICATE-----
"""
PEM_KEY = b"""-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgqyVwAWfCh412zJFf
URcmBdY69V5bM+nSJ/tUcq7V6umhRANCAAR64/ozky6GC+EP4FIHdg0wptypekkC
nE2lc5jKTidi28XLb1uQO/q6Vfo2Ayfn6R1cCh4AEhEB6xDr6nK7YdSc
-----END PRIVATE KEY-----
"""
B64_CERT = base64.b64encode(PEM_CERT).decode()
B64_KEY = base64.b64encode(PEM_KEY).decode()


def write(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def kubeconfig(cluster, user, context="", current="c", extra=""):
    return f"""apiVersion: v1
kind: Config
clusters:
- name: k
  cluster:
{cluster}
users:
- name: u
  user:
{user}
contexts:
- name: c
  context:
    cluster: k
    user: u
{context}
current-context: {current}
{extra}"""


def kube_config_seeds():
    srv = "    server: https://127.0.0.1:6443"
    ca = f"{srv}\n    certificate-authority-data: {B64_CERT}"
    seeds = {
        "token": kubeconfig(ca, "    token: abc.def"),
        "token-file": kubeconfig(ca, "    tokenFile: /nonexistent/token"),
        "client-cert-data": kubeconfig(ca, f"    client-certificate-data: {B64_CERT}\n    client-key-data: {B64_KEY}"),
        "client-cert-files": kubeconfig(ca, "    client-certificate: certs/client.crt\n    client-key: /nonexistent/client.key"),
        "client-cert-both": kubeconfig(ca, f"    client-certificate: a.crt\n    client-certificate-data: {B64_CERT}\n    client-key-data: {B64_KEY}"),
        "ca-file": kubeconfig(f"{srv}\n    certificate-authority: /nonexistent/ca.crt", "    token: t"),
        "ca-both": kubeconfig(f"{ca}\n    certificate-authority: ca.crt", "    token: t"),
        "ca-bad-base64": kubeconfig(f"{srv}\n    certificate-authority-data: '!!!notbase64'", "    token: t"),
        "insecure-yes": kubeconfig(f"{srv}\n    insecure-skip-tls-verify: yes", "    token: t"),
        "insecure-true-with-ca": kubeconfig(f"{ca}\n    insecure-skip-tls-verify: true", "    token: t"),
        "insecure-off": kubeconfig(f"{srv}\n    insecure-skip-tls-verify: off", "    token: t"),
        "tls-server-name": kubeconfig(f"{ca}\n    tls-server-name: kubernetes.default.svc", "    token: t"),
        "proxy-url": kubeconfig(f"{ca}\n    proxy-url: http://proxy.example:3128", "    token: t"),
        "exec": kubeconfig(ca, """    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: /usr/bin/credential-plugin
      args: [get-token, --cluster, k]
      env:
      - name: FOO
        value: bar
      - name: EMPTY
        value: ""
      installHint: install the plugin
      interactiveMode: Never
      provideClusterInfo: true"""),
        "exec-v1beta1-minimal": kubeconfig(ca, "    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: plugin"),
        "exec-no-command": kubeconfig(ca, "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      args: [x]"),
        "exec-and-cert": kubeconfig(ca, f"    client-certificate-data: {B64_CERT}\n    client-key-data: {B64_KEY}\n    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: plugin\n      interactiveMode: Never"),
        "auth-provider": kubeconfig(ca, "    auth-provider:\n      name: oidc\n      config: {idp-issuer-url: 'https://issuer'}"),
        "basic-auth": kubeconfig(ca, "    username: admin\n    password: secret"),
        "impersonate": kubeconfig(ca, """    token: t
    as: jane
    as-groups: [developers, system:authenticated]
    as-uid: "1234"
    as-user-extra:
      scopes: [view, edit]"""),
        "context-namespace": kubeconfig(ca, "    token: t", context="    namespace: team-a"),
        "user-empty": kubeconfig(ca, "    {}"),
        "user-null": kubeconfig(ca, "    null").replace("  user:\n    null", "  user: null"),
        "no-server": kubeconfig(f"    certificate-authority-data: {B64_CERT}", "    token: t"),
        "server-http-trailing-slash": kubeconfig("    server: http://example.com:8080/", "    token: t"),
        "server-ipv6": kubeconfig("    server: https://[::1]:6443", "    token: t"),
        "missing-current-context": kubeconfig(ca, "    token: t", current="nope"),
        "empty-current-context": kubeconfig(ca, "    token: t", current='""'),
        "extensions-preferences": kubeconfig(ca, "    token: t", extra="preferences: {colors: true}\nextensions:\n- name: x\n  extension: {a: 1}\n"),
        "empty": "",
        "null": "null\n",
        "tilde": "~\n",
        "not-a-map": "- a\n- b\n",
        "scalars-only": "apiVersion: v1\nkind: Config\n",
    }
    seeds["multi-context"] = f"""apiVersion: v1
kind: Config
clusters:
- name: prod
  cluster: {{server: "https://10.0.0.1", certificate-authority-data: "{B64_CERT}"}}
- name: dev
  cluster: {{server: 'https://dev.example:443', insecure-skip-tls-verify: y}}
users:
- name: admin
  user: {{token: admin-token}}
- name: dev
  user:
    exec: {{apiVersion: client.authentication.k8s.io/v1, command: dev-login, interactiveMode: IfAvailable}}
contexts:
- name: prod
  context: {{cluster: prod, user: admin}}
- name: dev
  context: {{cluster: dev, user: dev, namespace: dev}}
- name: dangling
  context: {{cluster: nowhere, user: nobody}}
current-context: dev
"""
    seeds["dangling-context"] = seeds["multi-context"].replace("current-context: dev", "current-context: dangling")
    seeds["duplicate-names"] = seeds["multi-context"].replace("- name: dev\n  cluster", "- name: prod\n  cluster")
    seeds["json"] = json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:6443", "certificate-authority-data": B64_CERT}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u", "namespace": "ns"}}],
    })
    seeds["anchors-aliases"] = """apiVersion: v1
kind: Config
clusters:
- name: k
  cluster: &cl
    server: https://127.0.0.1:6443
    insecure-skip-tls-verify: true
- name: k2
  cluster: *cl
users:
- name: u
  user: &usr {token: !!str 12345}
contexts:
- name: c
  context: {cluster: k2, user: u}
current-context: c
"""
    seeds["merge-key"] = """base: &base
  server: https://127.0.0.1:6443
clusters:
- name: k
  cluster:
    <<: *base
    tls-server-name: x
users:
- {name: u, user: {token: t}}
contexts:
- {name: c, context: {cluster: k, user: u}}
current-context: c
"""
    seeds["block-scalars"] = f"""clusters:
- name: k
  cluster:
    server: >-
      https://127.0.0.1:6443
    certificate-authority-data: |
      {B64_CERT[:64]}
      {B64_CERT[64:]}
users:
- name: u
  user:
    token: "quoted\\ttoken"
contexts:
- name: c
  context: {{cluster: k, user: u}}
current-context: 'c'
"""
    seeds["multi-document"] = seeds["json"] + "\n---\napiVersion: v1\nkind: Config\n"
    seeds["deep-nesting"] = seeds["token"] + "extensions: " + "[" * 64 + "{a: b}" + "]" * 64 + "\n"
    for name, text in seeds.items():
        write("kube_config", name, text)


def event(typ, name="cache", rv="101", spec=None, kind="RedisCluster"):
    obj = {"apiVersion": "cache.example.com/v1alpha1", "kind": kind,
           "metadata": {"name": name, "namespace": "default", "resourceVersion": rv,
                        "uid": "0c1e-" + name, "labels": {"app.kubernetes.io/managed-by": "rdc-operator"}}}
    if spec is not None:
        obj["spec"] = spec
    return json.dumps({"type": typ, "object": obj}, separators=(",", ":"))


def status(code, reason, message):
    return json.dumps({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                                  "status": "Failure", "message": message, "reason": reason,
                                                  "code": code}}, separators=(",", ":"))


def watch_seeds():
    spec = {"size": 3, "image": "redis", "version": "7.2"}
    add, mod, dele = event("ADDED", spec=spec), event("MODIFIED", rv="102", spec=dict(spec, size=5)), event("DELETED", rv="103")
    bookmark = json.dumps({"type": "BOOKMARK", "object": {"kind": "RedisCluster", "apiVersion": "cache.example.com/v1alpha1",
                                                          "metadata": {"resourceVersion": "250",
                                                                       "annotations": {"k8s.io/initial-events-end": "true"}}}},
                          separators=(",", ":"))
    gone = status(410, "Expired", "too old resource version: 100 (250)")
    gone2 = status(410, "Gone", "The resourceVersion for the provided watch is too old.")
    internal = status(500, "InternalError", "etcd leader changed")
    streams = {
        "add-modify-delete": "\n".join([add, mod, dele]) + "\n",
        "bookmark": "\n".join([add, bookmark, mod]) + "\n",
        "error-410-expired": "\n".join([add, gone]) + "\n",
        "error-410-gone": gone2 + "\n",
        "error-500": "\n".join([add, internal, mod]) + "\n",
        "partial-last-line": add + "\n" + mod[: len(mod) // 2],
        "crlf": "\r\n".join([add, mod]) + "\r\n",
        "blank-lines": "\n\n" + add + "\n\n\n" + dele + "\n",
        "unknown-type": '{"type":"SYNC","object":{"metadata":{"resourceVersion":"1"}}}\n',
        "missing-object": '{"type":"ADDED"}\n' + add + "\n",
        "object-not-object": '{"type":"MODIFIED","object":[1,2]}\n',
        "not-json": "this is not json\n" + add + "\n",
        "truncated-json": '{"type":"ADDED","object":{"metadata":{"name":"a"\n',
        "huge-rv": event("ADDED", rv="9" * 250, spec=spec) + "\n",
        "no-rv": '{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"x"}}}\n',
        "unicode": event("ADDED", name="caf\u00e9\u2603", spec={"image": "r\u00e9dis\u0000x"}) + "\n",
        "many-small": "".join(event("MODIFIED", name=f"c{i}", rv=str(200 + i), spec={"size": i}) + "\n" for i in range(12)),
        "configmap": json.dumps({"type": "ADDED", "object": {"apiVersion": "v1", "kind": "ConfigMap",
                                                            "metadata": {"name": "cache-config", "namespace": "default",
                                                                         "resourceVersion": "77",
                                                                         "ownerReferences": [{"apiVersion": "cache.example.com/v1alpha1",
                                                                                              "kind": "RedisCluster", "name": "cache",
                                                                                              "uid": "0c1e-cache", "controller": True}]},
                                                            "data": {"redis.conf": "maxmemory 256mb\n"}}}) + "\n",
        "error-then-more": "\n".join([gone, add]) + "\n",
        "empty": "",
        "only-newlines": "\n\n\n",
    }
    for name, s in streams.items():
        data = s.encode()
        write("watch", name, bytes([255, 0]) + data)                      # one line fits 2056 bytes
    # Chunked feeds and tight line limits: the same streams cut in pieces.
    write("watch", "chunked-1-7-30", bytes([255, 3, 0, 6, 29]) + streams["bookmark"].encode())
    write("watch", "chunked-bytewise", bytes([255, 1, 0]) + streams["error-410-expired"].encode())
    write("watch", "chunked-partial", bytes([255, 2, 13, 200]) + streams["partial-last-line"].encode())
    write("watch", "line-too-long", bytes([4, 0]) + streams["add-modify-delete"].encode())   # 48-byte lines
    write("watch", "line-too-long-chunked", bytes([10, 2, 5, 40]) + streams["bookmark"].encode())


def review(op, obj=None, old=None, uid="705ab4f5-6393-11e8-b7cc-42010a800002", api="admission.k8s.io/v1", extra=None,
           kind=None, name="cache"):
    req = {"uid": uid,
           "kind": kind or {"group": "cache.example.com", "version": "v1alpha1", "kind": "RedisCluster"},
           "resource": {"group": "cache.example.com", "version": "v1alpha1", "resource": "redisclusters"},
           "requestKind": {"group": "cache.example.com", "version": "v1alpha1", "kind": "RedisCluster"},
           "operation": op, "name": name, "namespace": "default",
           "userInfo": {"username": "kubernetes-admin", "groups": ["system:masters", "system:authenticated"]},
           "options": {"apiVersion": "meta.k8s.io/v1", "kind": op.capitalize() + "Options"}, "dryRun": False}
    if obj is not None:
        req["object"] = obj
    if old is not None:
        req["oldObject"] = old
    if extra:
        req.update(extra)
    return json.dumps({"apiVersion": api, "kind": "AdmissionReview", "request": req}, separators=(",", ":"))


def rc(spec, name="cache", meta=None):
    m = {"name": name, "namespace": "default", "uid": "0c1e-uid", "generation": 1,
         "creationTimestamp": "2026-12-01T15:00:00Z"}
    if meta:
        m.update(meta)
    o = {"apiVersion": "cache.example.com/v1alpha1", "kind": "RedisCluster", "metadata": m}
    if spec is not None:
        o["spec"] = spec
    return o


def admission_seeds():
    valid = {"size": 3, "image": "redis", "version": "7.2",
             "config": {"maxmemory": "256mb", "maxmemoryPolicy": "allkeys-lru"},
             "storage": {"size": "1Gi", "storageClass": "standard"}}
    minimal = {"size": 1, "image": "redis"}
    raw = {
        "create-valid": review("CREATE", rc(valid)),
        "create-minimal": review("CREATE", rc(minimal)),
        "create-tagged-image": review("CREATE", rc({"size": 2, "image": "docker.io/library/redis:7.0", "version": "7.2"})),
        "create-size-11": review("CREATE", rc(dict(valid, size=11))),
        "create-size-0": review("CREATE", rc(dict(valid, size=0))),
        "create-size-string": review("CREATE", rc(dict(valid, size="3"))),
        "create-bad-image": review("CREATE", rc(dict(valid, image="re dis"))),
        "create-bad-version": review("CREATE", rc(dict(valid, version="7 2"))),
        "create-bad-policy": review("CREATE", rc(dict(valid, config={"maxmemoryPolicy": "lru"}))),
        "create-bad-maxmemory": review("CREATE", rc(dict(valid, config={"maxmemory": "lots"}))),
        "create-bad-storage": review("CREATE", rc(dict(valid, storage={"size": "0Gi", "storageClass": "Fast_SSD"}))),
        "create-bad-name": review("CREATE", rc(valid, name="bad.name"), name="bad.name"),
        "create-long-name": review("CREATE", rc(valid, name="r" * 60), name="r" * 60),
        "create-no-spec": review("CREATE", rc(None)),
        "create-spec-null": review("CREATE", rc(None) | {"spec": None}),
        "create-dry-run": review("CREATE", rc(minimal), extra={"dryRun": True}),
        "create-with-status": review("CREATE", rc(valid) | {"status": {"phase": "Running", "replicas": 3}}),
        "update-size-up": review("UPDATE", rc(dict(valid, size=5)), rc(valid)),
        "update-size-down": review("UPDATE", rc(dict(valid, size=1)), rc(valid)),
        "update-storage-size": review("UPDATE", rc(dict(valid, storage={"size": "5Gi", "storageClass": "standard"})), rc(valid)),
        "update-storage-same-spelled-differently": review("UPDATE", rc(dict(valid, storage={"size": "1024Mi", "storageClass": "standard"})), rc(valid)),
        "update-storage-class-set": review("UPDATE", rc(dict(minimal, storage={"storageClass": "fast"})), rc(minimal)),
        "update-metadata-only": review("UPDATE", rc(valid, meta={"labels": {"team": "cache"}, "generation": 1}), rc(valid)),
        "update-finalizer-on-invalid": review("UPDATE", rc(dict(valid, size=99), meta={"finalizers": ["cache.example.com/finalizer"]}), rc(dict(valid, size=99))),
        "update-deleting": review("UPDATE", rc(valid, meta={"deletionTimestamp": "2026-12-01T15:01:00Z"}), rc(valid)),
        "delete": review("DELETE", None, rc(valid)),
        "connect": review("CONNECT", None, None),
        "scale-up": review("UPDATE", {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "cache"}, "spec": {"replicas": 4}},
                           {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "cache"}, "spec": {"replicas": 3}},
                           kind={"group": "autoscaling", "version": "v1", "kind": "Scale"}, extra={"subResource": "scale"}),
        "scale-down": review("UPDATE", {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "cache"}, "spec": {"replicas": 2}},
                             {"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "cache"}, "spec": {"replicas": 3}},
                             kind={"group": "autoscaling", "version": "v1", "kind": "Scale"}, extra={"subResource": "scale"}),
        "v1beta1": review("CREATE", rc(valid), api="admission.k8s.io/v1beta1"),
        "wrong-kind": review("CREATE", rc(valid), kind={"group": "", "version": "v1", "kind": "ConfigMap"}),
        "no-uid": review("CREATE", rc(valid), uid=None),
        "request-null": '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":null}',
        "not-a-review": '{"apiVersion":"v1","kind":"Pod"}',
        "truncated": review("CREATE", rc(valid))[:120],
        "not-json": "this is not JSON",
        "empty-object": "{}",
        "deep-array": '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"x","object":' + "[" * 80 + "]" * 80 + "}}",
    }
    for name, body in raw.items():
        write("admission", "raw-" + name, b"\x00" + body.encode())
    for name in ("create-valid", "create-minimal", "update-size-down", "delete", "create-no-spec", "scale-up"):
        write("admission", "raw-mutate-" + name, b"\x04" + raw[name].encode())
    specs = {
        "valid": valid,
        "minimal": minimal,
        "empty": {},
        "size-max": dict(minimal, size=10),
        "size-negative": dict(minimal, size=-1),
        "size-float": dict(minimal, size=2.5),
        "size-huge": dict(minimal, size=2 ** 63),
        "image-digest": dict(minimal, image="redis@sha256:" + "a" * 64),
        "image-registry-port": dict(minimal, image="registry.local:5000/cache/redis", version="7.2.4"),
        "version-long": dict(minimal, version="v" * 129),
        "config-noeviction": dict(minimal, config={"maxmemory": "1gb", "maxmemoryPolicy": "noeviction"}),
        "config-extra": dict(minimal, config={"maxmemory": "100mb", "appendonly": "yes"}),
        "storage-ti": dict(minimal, storage={"size": "2Ti"}),
        "storage-bad-unit": dict(minimal, storage={"size": "10GB"}),
        "nulls": {"size": None, "image": None, "config": None, "storage": None},
        "wrong-types": {"size": True, "image": 7, "config": [], "storage": "1Gi"},
        "unknown-fields": dict(valid, replicas=3, extra={"a": [1, {"b": None}]}),
    }
    for name, spec in specs.items():
        text = json.dumps(spec, separators=(",", ":"))
        write("admission", "create-spec-" + name, b"\x01" + text.encode())
        write("admission", "mutate-spec-" + name, b"\x05" + text.encode())
    for name in ("valid", "minimal", "storage-ti", "nulls", "size-max"):
        text = json.dumps(specs[name], separators=(",", ":")).encode()
        write("admission", "update-old-" + name, b"\x02" + text)
        write("admission", "update-new-" + name, b"\x03" + text)
    write("admission", "create-spec-not-json", b"\x01{\"size\":")
    write("admission", "create-spec-array", b"\x01[1,2,3]")


def conversion_seeds():
    """fuzz_conversion: byte 0 = mode (& 3: 0 raw review, 1 object to v1, 2 object to
    v1alpha1, 3 annotation text on a v1alpha1 object, to v1)."""
    def convreview(desired, objs, uid="c-1"):
        return json.dumps({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
                           "request": {"uid": uid, "desiredAPIVersion": desired, "objects": objs}})
    spec = {"size": 3, "image": "redis", "version": "7.2",
            "config": {"maxmemory": "256mb", "maxmemoryPolicy": "allkeys-lru"},
            "storage": {"size": "1Gi", "storageClass": "standard"}}
    alpha = {"apiVersion": "cache.example.com/v1alpha1", "kind": "RedisCluster",
             "metadata": {"name": "cache", "namespace": "default", "uid": "u-1", "resourceVersion": "7"},
             "spec": spec, "status": {"phase": "Running", "replicas": 3, "readyReplicas": 3}}
    v1spec = dict(spec, mode="Replication", persistence="rdb",
                  auth={"secretRef": {"name": "redis-auth", "key": "password"}},
                  failover={"downAfter": "3s", "minReplicasToWrite": 1, "minReplicasMaxLag": 10})
    v1 = {"apiVersion": "cache.example.com/v1", "kind": "RedisCluster",
          "metadata": {"name": "cache", "namespace": "default"}, "spec": v1spec,
          "status": {"phase": "Running", "primary": "cache-0",
                     "nodes": [{"pod": "cache-0", "ip": "127.10.0.5", "role": "primary", "linkUp": True,
                                "offset": 1234, "lagBytes": 0}]}}
    annotated = json.loads(json.dumps(alpha))
    annotated["metadata"]["annotations"] = {"cache.example.com/v1-fields": json.dumps(
        {"spec": {"mode": "Replication", "persistence": "rdb"}}, separators=(",", ":"))}
    raw = {
        "to-v1": convreview("cache.example.com/v1", [alpha]),
        "to-v1alpha1": convreview("cache.example.com/v1alpha1", [v1]),
        "annotated-to-v1": convreview("cache.example.com/v1", [annotated]),
        "same-version": convreview("cache.example.com/v1", [v1]),
        "two-objects": convreview("cache.example.com/v1alpha1", [v1, alpha]),
        "unknown-version": convreview("cache.example.com/v2", [alpha]),
        "not-rediscluster": convreview("cache.example.com/v1", [{"apiVersion": "v1", "kind": "ConfigMap"}]),
        "no-objects": convreview("cache.example.com/v1", []),
        "no-request": '{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}',
        "not-json": '{"apiVersion":"apiextensions.k8s.io/v1",',
        "deep": convreview("cache.example.com/v1", [json.loads("[" * 60 + "]" * 60)]),
    }
    for name, body in raw.items():
        write("conversion", "raw-" + name, b"\x00" + body.encode())
    write("conversion", "object-to-v1", b"\x01" + json.dumps(alpha).encode())
    write("conversion", "object-to-v1alpha1", b"\x02" + json.dumps(v1).encode())
    write("conversion", "object-null-spec", b"\x01" + b'{"apiVersion":"cache.example.com/v1alpha1","kind":"RedisCluster","spec":null}')
    write("conversion", "annotation-valid", b"\x03" + b'{"spec":{"mode":"Replication","persistence":"aof"}}')
    write("conversion", "annotation-garbage", b"\x03" + b'{"spec":[1,')
    write("conversion", "annotation-status", b"\x03" + b'{"status":{"primary":"cache-1","nodes":[]}}')


if __name__ == "__main__":
    for t in ("kube_config", "watch", "admission", "conversion"):
        d = os.path.join(HERE, t)
        if os.path.isdir(d):
            for f in os.listdir(d):
                if not f.startswith("regress-"):  # inputs that once failed: kept as found
                    os.remove(os.path.join(d, f))
    kube_config_seeds()
    watch_seeds()
    admission_seeds()
    conversion_seeds()
    for t in ("kube_config", "watch", "admission", "conversion"):
        print(t, len(os.listdir(os.path.join(HERE, t))))
