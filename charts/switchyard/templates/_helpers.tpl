{{/* Names and labels shared by every template. */}}
{{- define "switchyard.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The ConfigMap the pre-delete hook creates to ask for an uninstall. */}}
{{- define "switchyard.uninstallMarker" -}}
{{ include "switchyard.fullname" . }}-uninstalling
{{- end }}

{{- define "switchyard.serviceAccountName" -}}
{{- default (include "switchyard.fullname" .) .Values.serviceAccount.name -}}
{{- end -}}

{{- define "switchyard.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "switchyard.selector" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .os }}
{{- end -}}

{{/* The main DaemonSet runs on Windows only for the hns dataplane. */}}
{{- define "switchyard.linuxEnabled" -}}
{{- if ne .Values.dataplane "hns" }}true{{ end -}}
{{- end -}}
{{- define "switchyard.windowsEnabled" -}}
{{- if or (eq .Values.dataplane "hns") .Values.windows.enabled }}true{{ end -}}
{{- end -}}

{{- define "switchyard.linuxImage" -}}
{{- if or (eq .Values.dataplane "ovs") (eq .Values.dataplane "hns") -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- else -}}
{{- if not .Values.thirdParty.image.repository -}}
{{- fail (printf "dataplane %q is a third-party driver: set thirdParty.image.repository to an image with it built in" .Values.dataplane) -}}
{{- end -}}
{{- printf "%s:%s" .Values.thirdParty.image.repository (default .Chart.AppVersion .Values.thirdParty.image.tag) -}}
{{- end -}}
{{- end -}}

{{- define "switchyard.windowsImage" -}}
{{- printf "%s:%s" .Values.windows.image.repository (default .Chart.AppVersion .Values.windows.image.tag) -}}
{{- end -}}

{{/* Settings every switchyard gets, before the user's config. */}}
{{- define "switchyard.commonConfig" -}}
metrics-bind-address: {{ printf "%s:%d" .Values.metrics.bindAddress (int .Values.metrics.port) | quote }}
healthz-bind-address: {{ printf "0.0.0.0:%d" (int .Values.health.port) | quote }}
{{- with .Values.kubeAPIServer }}
master: {{ . | quote }}
{{- end }}
{{- end -}}

{{/*
The probes, the same on every DaemonSet. switchyard serves its health
port from its start, while the API server's objects are still listed:
/livez answers (a long initial list on a large cluster is not a dead
process, and liveness fails only when one sync is stuck for 5 minutes),
/readyz waits for the first sync (a rolling update moves on to the next
node only once this one has programmed its dataplane). The startup probe
gives the process 5 minutes to start serving at all.
*/}}
{{- define "switchyard.probes" -}}
startupProbe:
  httpGet:
    path: /livez
    port: {{ .Values.health.port }}
  periodSeconds: 5
  timeoutSeconds: 5
  failureThreshold: 60
livenessProbe:
  httpGet:
    path: /livez
    port: {{ .Values.health.port }}
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  httpGet:
    path: /readyz
    port: {{ .Values.health.port }}
  periodSeconds: 5
  timeoutSeconds: 5
{{- end }}
