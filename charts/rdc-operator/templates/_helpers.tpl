{{/*
Written by hand (scripts/helm_chart.py writes the other templates from deploy/).
*/}}

{{/* The app.kubernetes.io/name label: deploy/'s, rediscluster-operator. */}}
{{- define "rdc-operator.name" -}}
{{- default "rediscluster-operator" .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Objects' names: fullnameOverride, else the release name (rediscluster-operator makes
deploy/'s names). Cluster-scoped objects (ClusterRoles, webhook configurations) carry it
too, so two releases do not collide; the CRD is one per cluster whatever the release. */}}
{{- define "rdc-operator.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- end }}

{{- define "rdc-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "rdc-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rdc-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "rdc-operator.labels" -}}
helm.sh/chart: {{ include "rdc-operator.chart" . }}
{{ include "rdc-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: rediscluster-operator
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
The webhook serving certificate when cert-manager does not make it: a CA and a
certificate for the webhook Service's names, generated once per render and shared by every
template that needs it (the Secret, the webhook configurations' and the CRD's caBundle:
memoized in the root context, which Helm passes to all the chart's templates). On upgrade
the Secret of the installed release is reused (lookup), so the CA does not change with
every `helm upgrade`; `helm template` and --dry-run (no cluster) always generate a new one.
Returns a dict: ca, crt, key (PEM).
*/}}
{{- define "rdc-operator.webhookCerts" -}}
{{- $root := . -}}
{{- if not (hasKey $root "rdcWebhookCerts") -}}
{{- $secretName := printf "%s-webhook-cert" (include "rdc-operator.fullname" $root) -}}
{{- $old := lookup "v1" "Secret" $root.Release.Namespace $secretName -}}
{{- $certs := dict -}}
{{- if and $old $old.data (index $old.data "ca.crt") (index $old.data "tls.crt") (index $old.data "tls.key") -}}
{{- $_ := set $certs "ca" (index $old.data "ca.crt" | b64dec) -}}
{{- $_ := set $certs "crt" (index $old.data "tls.crt" | b64dec) -}}
{{- $_ := set $certs "key" (index $old.data "tls.key" | b64dec) -}}
{{- else -}}
{{- $svc := printf "%s-webhook" (include "rdc-operator.fullname" $root) -}}
{{- $ns := $root.Release.Namespace -}}
{{- $days := int $root.Values.webhook.certValidityDays -}}
{{- $ca := genCA (printf "%s-webhook-ca" (include "rdc-operator.fullname" $root)) $days -}}
{{- $names := list (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) $svc (printf "%s.%s" $svc $ns) -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $svc $ns) nil $names $days $ca -}}
{{- $_ := set $certs "ca" $ca.Cert -}}
{{- $_ := set $certs "crt" $cert.Cert -}}
{{- $_ := set $certs "key" $cert.Key -}}
{{- end -}}
{{- $_ := set $root "rdcWebhookCerts" $certs -}}
{{- end -}}
{{- toYaml (get $root "rdcWebhookCerts") -}}
{{- end }}

{{/* The CA of the webhook certificate, base64, for a caBundle. */}}
{{- define "rdc-operator.webhookCA" -}}
{{- (include "rdc-operator.webhookCerts" . | fromYaml).ca | b64enc -}}
{{- end }}
