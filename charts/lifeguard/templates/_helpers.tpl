{{/*
metadata: name, namespace (when namespaced) and lifeguard's labels and annotations.
  include "lifeguard.metadata" (dict "root" $ "name" "x" "namespaced" true
    "labels" (dict ...) "annotations" (dict ...))
*/}}
{{- define "lifeguard.metadata" -}}
{{- $root := .root -}}
name: {{ .name }}
{{- if .namespaced }}
namespace: {{ .namespace | default $root.Release.Namespace }}
{{- end }}
labels:
  app.kubernetes.io/part-of: lifeguard
  app.kubernetes.io/managed-by: {{ $root.Release.Service }}
  app.kubernetes.io/instance: {{ $root.Release.Name }}
  helm.sh/chart: {{ printf "%s-%s" $root.Chart.Name $root.Chart.Version | replace "+" "_" }}
  {{- with .labels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
  {{- with $root.Values.extraLabels }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- $annotations := merge (dict) (.annotations | default dict) $root.Values.extraAnnotations }}
{{- with $annotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* A pod template's labels: its component's name, part-of and the extra labels. */}}
{{- define "lifeguard.podLabels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/part-of: lifeguard
{{- with .root.Values.extraLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* A pod template's annotations: Prometheus' scrape hints on PORT and the extra ones. */}}
{{- define "lifeguard.podAnnotations" -}}
prometheus.io/path: /metrics
prometheus.io/port: {{ .port | quote }}
prometheus.io/scrape: "true"
{{- with .root.Values.extraAnnotations }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* image: "repository:tag" of images.NAME, and the pull policy when one is set. */}}
{{- define "lifeguard.image" -}}
{{- $image := index .root.Values.images .name -}}
image: {{ printf "%s:%s" $image.repository $image.tag | quote }}
{{- with .root.Values.images.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{- define "lifeguard.pullSecrets" -}}
{{- with .Values.images.pullSecrets }}
imagePullSecrets:
{{- range . }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end }}

{{/* The ServiceAccount user name of one of lifeguard's programs. */}}
{{- define "lifeguard.user" -}}
system:serviceaccount:{{ .root.Release.Namespace }}:{{ .name }}
{{- end }}

{{/* Who may answer the disposal handshake, as a CEL list literal. */}}
{{- define "lifeguard.disposalAgents" -}}
{{- $agents := .Values.disposalAgents -}}
{{- if not $agents -}}
{{- $agents = list (include "lifeguard.user" (dict "root" . "name" "lifeguard-prober")) -}}
{{- end -}}
[{{ range $i, $a := $agents }}{{ if $i }}, {{ end }}'{{ $a }}'{{ end }}]
{{- end }}

{{- define "lifeguard.certManager" -}}
{{- if eq .Values.certificates.mode "cert-manager" }}true{{ end }}
{{- end }}
