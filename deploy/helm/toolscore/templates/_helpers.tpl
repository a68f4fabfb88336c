{{/*
The chart name, truncated to a DNS label.
*/}}
{{- define "toolscore.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of every resource: the release name, plus the chart name unless
the release name already contains it.
*/}}
{{- define "toolscore.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The headless Service: one DNS record per ready pod, for the Collector's
loadbalancing exporter and the StatefulSet.
*/}}
{{- define "toolscore.headlessName" -}}
{{- printf "%s-headless" (include "toolscore.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolscore.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every resource.
*/}}
{{- define "toolscore.labels" -}}
helm.sh/chart: {{ include "toolscore.chart" . }}
{{ include "toolscore.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/*
Labels that select the pods (never change them after the first install: a
Deployment's selector is immutable).
*/}}
{{- define "toolscore.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolscore.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "toolscore.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "toolscore.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
The image: by digest when one is given, else by tag (default: appVersion).
*/}}
{{- define "toolscore.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/*
toolscore's configuration, as a YAML document: `.Values.config` merged over
the chart's defaults (file globs for the mounted evaluator and eval-set
files), then the listeners, which the chart owns: 0.0.0.0 on `.Values.ports`,
so the container and Service ports always match what toolscore binds.
*/}}
{{- define "toolscore.config" -}}
{{- $fileDefaults := dict }}
{{- $evaluatorFiles := ternary (dict "evaluators" (dict "files" (list "evaluators/*.json"))) (dict) (not (empty .Values.evaluators)) }}
{{- $evalSetFiles := ternary (dict "eval_sets" (dict "files" (list "eval-sets/*.json"))) (dict) (not (empty .Values.evalSets)) }}
{{- $receivers := dict "grpc" (dict "endpoint" (printf "0.0.0.0:%d" (int .Values.ports.otlpGrpc))) "http" (dict "endpoint" (printf "0.0.0.0:%d" (int .Values.ports.otlpHttp))) }}
{{- $api := dict "http" (dict "endpoint" (printf "0.0.0.0:%d" (int .Values.ports.http))) "grpc" (dict "endpoint" (printf "0.0.0.0:%d" (int .Values.ports.grpc))) }}
{{- $listeners := dict "receivers" $receivers "api" $api }}
{{- $config := mustMergeOverwrite $fileDefaults $evaluatorFiles $evalSetFiles (deepCopy .Values.config) $listeners }}
{{- toYaml $config }}
{{- end }}

{{/*
The drain deadline the config sets (toolscore's default: 20000 ms).
*/}}
{{- define "toolscore.shutdownTimeoutMs" -}}
{{- $config := .Values.config }}
{{- if hasKey $config "shutdown_timeout_ms" }}
{{- int (get $config "shutdown_timeout_ms") }}
{{- else }}
{{- 20000 }}
{{- end }}
{{- end }}

{{/*
Checks across values, rendered (as nothing) by the workload template: a
failed check stops `helm install` with its message.
*/}}
{{- define "toolscore.validate" -}}
{{- $graceMs := mul (int .Values.terminationGracePeriodSeconds) 1000 }}
{{- $shutdownMs := int (include "toolscore.shutdownTimeoutMs" .) }}
{{- if le (int $graceMs) $shutdownMs }}
{{- fail (printf "terminationGracePeriodSeconds (%d s) must be above config.shutdown_timeout_ms (%d ms): the pod would be killed while it drains" (int .Values.terminationGracePeriodSeconds) $shutdownMs) }}
{{- end }}
{{- if eq (toString .Values.image.tag) "latest" }}
{{- fail "image.tag: pin a version, not latest" }}
{{- end }}
{{- end }}

{{/*
Pod annotations that roll the pods when the configuration or the mounted
files change.
*/}}
{{- define "toolscore.checksum" -}}
{{- print (include "toolscore.config" .) (toJson .Values.evaluators) (toJson .Values.evalSets) | sha256sum }}
{{- end }}
