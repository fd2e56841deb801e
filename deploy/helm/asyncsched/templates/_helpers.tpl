{{/* Base name of the objects: the release name, or <release>-asyncsched. */}}
{{- define "asyncsched.fullname" -}}
{{- if contains "asyncsched" .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-asyncsched" .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "asyncsched.scheduler" -}}
{{- printf "%s-scheduler" (include "asyncsched.fullname" .) -}}
{{- end -}}

{{- define "asyncsched.leaseNamespace" -}}
{{- .Values.leaderElection.namespace | default .Release.Namespace -}}
{{- end -}}

{{- define "asyncsched.selectorLabels" -}}
app.kubernetes.io/name: asyncsched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "asyncsched.labels" -}}
{{ include "asyncsched.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "asyncsched.controllers" -}}
{{- printf "%s-controllers" (include "asyncsched.fullname" .) -}}
{{- end -}}

{{- define "asyncsched.controllersSelectorLabels" -}}
app.kubernetes.io/name: asyncsched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: controllers
{{- end -}}

{{- define "asyncsched.controllersLabels" -}}
{{ include "asyncsched.controllersSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "asyncsched.descheduler" -}}
{{- printf "%s-descheduler" (include "asyncsched.fullname" .) -}}
{{- end -}}

{{- define "asyncsched.deschedulerSelectorLabels" -}}
app.kubernetes.io/name: asyncsched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: descheduler
{{- end -}}

{{- define "asyncsched.deschedulerLabels" -}}
{{ include "asyncsched.deschedulerSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Prometheus' conventional scrape annotations, for a pod template. */}}
{{- define "asyncsched.scrapeAnnotations" -}}
{{- if .root.Values.metrics.scrapeAnnotations }}
annotations:
  prometheus.io/scrape: "true"
  prometheus.io/port: {{ .port | quote }}
  prometheus.io/path: /metrics
{{- end }}
{{- end -}}

{{/* true when cert-manager should make the webhook's certificate. */}}
{{- define "asyncsched.certManager" -}}
{{- $mode := toString .Values.controllers.webhook.certManager -}}
{{- if eq $mode "auto" -}}
{{- .Capabilities.APIVersions.Has "cert-manager.io/v1" -}}
{{- else -}}
{{- eq $mode "true" -}}
{{- end -}}
{{- end -}}
