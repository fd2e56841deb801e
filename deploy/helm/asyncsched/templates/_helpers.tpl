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
