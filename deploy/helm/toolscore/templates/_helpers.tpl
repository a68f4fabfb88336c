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
loadbalancing exporter (and the StatefulSet's serviceName, when there is one).
*/}}
{{- define "toolscore.headlessName" -}}
{{- printf "%s-headless" (include "toolscore.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolscore.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Labels of every resource: the pods' labels plus the chart's version, which
stays off the pod template so that a chart upgrade alone does not roll the
pods. The headless Service has a component of its own (service-headless.yaml).
*/}}
{{- define "toolscore.labels" -}}
helm.sh/chart: {{ include "toolscore.chart" . }}
{{ include "toolscore.podLabels" . }}
{{- end }}

{{/*
Labels of the pods (and, through toolscore.labels, of every resource).
*/}}
{{- define "toolscore.podLabels" -}}
{{ include "toolscore.baseLabels" . }}
app.kubernetes.io/component: scorer
{{- end }}

{{/*
The labels every resource has, whatever its component.
*/}}
{{- define "toolscore.baseLabels" -}}
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
the chart's defaults (the SQLite file in the data volume, file globs for the
mounted evaluator and eval-set files), then what the chart owns: the
listeners, 0.0.0.0 on `.Values.ports`, so the container and Service ports
always match what toolscore binds; and, with `postgres.existingSecret`, the
password file where the pod mounts the Secret's key.
*/}}
{{- define "toolscore.config" -}}
{{- $backend := include "toolscore.backend" . }}
{{- /* Results in the data volume (persistence), unless config says otherwise. */}}
{{- $fileDefaults := dict "store" (dict "backend" "sqlite") }}
{{- if eq $backend "sqlite" }}
{{- $_ := set $fileDefaults.store "sqlite" (dict "path" "/var/lib/toolscore/results.db") }}
{{- end }}
{{- if eq (include "toolscore.wal" .) "true" }}
{{- $_ := set $fileDefaults "wal" (dict "dir" "/var/lib/toolscore/wal") }}
{{- end }}
{{- $evaluatorFiles := ternary (dict "evaluators" (dict "files" (list "evaluators/*.json"))) (dict) (not (empty .Values.evaluators)) }}
{{- $evalSetFiles := ternary (dict "eval_sets" (dict "files" (list "eval-sets/*.json"))) (dict) (not (empty .Values.evalSets)) }}
{{- $listeners := dict }}
{{- range $key := list "otlpGrpc" "otlpHttp" "http" "grpc" }}
{{- $listener := dict "endpoint" (printf "0.0.0.0:%d" (int (get $.Values.ports $key))) }}
{{- if eq (include "toolscore.tlsOn" (list $ $key)) "true" }}
{{- $_ := set $listener "tls" (include "toolscore.tlsBlock" $ | fromYaml) }}
{{- end }}
{{- if eq (include "toolscore.authOn" (list $ $key)) "true" }}
{{- $_ := set $listener "auth" (dict "enabled" true) }}
{{- if eq $key "http" }}
{{- $_ := set $listener.auth "public_metrics" $.Values.auth.publicMetrics }}
{{- end }}
{{- end }}
{{- $_ := set $listeners $key $listener }}
{{- end }}
{{- $receivers := dict "grpc" $listeners.otlpGrpc "http" $listeners.otlpHttp }}
{{- $api := dict "http" $listeners.http "grpc" $listeners.grpc }}
{{- $owned := dict "receivers" $receivers "api" $api }}
{{- if .Values.auth.existingSecret }}
{{- /* The chart's token files first, then any of config.auth.tokens. */}}
{{- $own := include "toolscore.authTokens" . | fromYamlArray }}
{{- $theirs := dig "auth" "tokens" (list) (deepCopy .Values.config) | default (list) }}
{{- $_ := set $owned "auth" (dict "tokens" (concat $own $theirs)) }}
{{- end }}
{{- if .Values.postgres.existingSecret }}
{{- $_ := set $owned "store" (dict "postgres" (dict "password_file" (include "toolscore.postgresPasswordFile" .))) }}
{{- end }}
{{- $config := mustMergeOverwrite $fileDefaults $evaluatorFiles $evalSetFiles (deepCopy .Values.config) $owned }}
{{- toYaml $config }}
{{- end }}

{{/*
The results store's backend `config` selects: sqlite (toolscore's default),
postgres or memory. With `existingConfigMap`, set `config.store.backend` to
the ConfigMap's: it still decides the workload and the chart's checks.
*/}}
{{- define "toolscore.backend" -}}
{{- include "toolscore.configValue" (list .Values.config (list "store" "backend") "sqlite") }}
{{- end }}

{{/*
Where the pod mounts the PostgreSQL password (`postgres.existingSecret`).
*/}}
{{- define "toolscore.postgresPasswordDir" -}}
/etc/toolscore/postgres
{{- end }}

{{- define "toolscore.postgresPasswordFile" -}}
{{- printf "%s/password" (include "toolscore.postgresPasswordDir" .) }}
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
A key of `config` by path (a list of keys), or the default toolscore uses
when the key is absent: (list $config (list "store" "max_traces") 100000).
*/}}
{{- define "toolscore.configValue" -}}
{{- $node := index . 0 }}
{{- $default := index . 2 }}
{{- range $key := index . 1 }}
{{- if and (kindIs "map" $node) (hasKey $node $key) (not (kindIs "invalid" (get $node $key))) }}
{{- $node = get $node $key }}
{{- else }}
{{- $node = $default }}
{{- end }}
{{- end }}
{{- $node }}
{{- end }}

{{/*
A Kubernetes memory quantity ("1Gi", "512Mi", "1G", "1.5Gi", 1073741824) in
bytes, as an integer; fails on a form it does not know.
*/}}
{{- define "toolscore.quantityBytes" -}}
{{- $q := toString . }}
{{- if regexMatch "^[0-9]+(\\.[0-9]+)?([eE][+-]?[0-9]+)?$" $q }}
{{- float64 $q | int64 }}
{{- else if regexMatch "^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)$" $q }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $unit := trimPrefix $number $q }}
{{- $units := dict "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 }}
{{- mulf (float64 $number) (get $units $unit) | int64 }}
{{- else }}
{{- fail (printf "resources.limits.memory: %q is not a memory quantity the chart can read (like 1Gi, 512Mi, 1G or a number of bytes)" $q) }}
{{- end }}
{{- end }}

{{/*
The memory toolscore's configured bounds need, in bytes (the estimate that
values.yaml's `resources` comment explains).
*/}}
{{- define "toolscore.memoryNeedBytes" -}}
{{- $c := .Values.config }}
{{- $grpc := include "toolscore.configValue" (list $c (list "receivers" "grpc" "max_recv_msg_size_bytes") 67108864) | float64 }}
{{- $http := include "toolscore.configValue" (list $c (list "receivers" "http" "max_decompressed_body_bytes") 67108864) | float64 }}
{{- $spans := include "toolscore.configValue" (list $c (list "assembler" "max_buffered_bytes") 536870912) | float64 }}
{{- $results := include "toolscore.configValue" (list $c (list "store" "max_bytes") 67108864) | float64 }}
{{- $queue := include "toolscore.configValue" (list $c (list "store" "writer" "queue_capacity") 1024) | float64 }}
{{- $batch := include "toolscore.configValue" (list $c (list "store" "writer" "max_batch") 512) | float64 }}
{{- addf 83886080.0 $grpc $http (mulf 1.5 $spans) (mulf 1.5 $results) (mulf 16384.0 (addf $queue $batch)) | int64 }}
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
{{- $memoryLimit := dig "limits" "memory" "" .Values.resources }}
{{- if and $memoryLimit (not .Values.existingConfigMap) }}
{{- $limit := include "toolscore.quantityBytes" $memoryLimit | int64 }}
{{- $need := include "toolscore.memoryNeedBytes" . | int64 }}
{{- if gt $need $limit }}
{{- fail (printf "resources.limits.memory (%s = %d MiB) is below the %d MiB that config's memory bounds need (80 MiB + receivers.grpc.max_recv_msg_size_bytes + receivers.http.max_decompressed_body_bytes + 1.5 x assembler.max_buffered_bytes + 1.5 x store.max_bytes + 16 KiB x (store.writer.queue_capacity + store.writer.max_batch)): lower those bounds or raise the limit, or the pod is OOM-killed under load and loses what it holds" (toString $memoryLimit) (div $limit 1048576) (div $need 1048576)) }}
{{- end }}
{{- end }}
{{- $backend := include "toolscore.backend" . }}
{{- if not (has $backend (list "sqlite" "postgres" "memory")) }}
{{- fail (printf "config.store.backend: %q is not a backend toolscore has (sqlite, postgres or memory)" $backend) }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (ne $backend "postgres") }}
{{- fail (printf "replicaCount: %d replicas need config.store.backend: postgres (it is %s): with %s each replica would keep its own results, and a query through the Service would answer 404 for the traces the other replicas evaluated. Set config.store.backend: postgres, config.store.postgres.url and postgres.existingSecret (see values.yaml), or replicaCount: 1" (int .Values.replicaCount) $backend $backend) }}
{{- end }}
{{- if and (eq $backend "postgres") (not .Values.existingConfigMap) (not (include "toolscore.configValue" (list .Values.config (list "store" "postgres" "url") ""))) }}
{{- fail "config.store.postgres.url is required with config.store.backend: postgres (a postgres://user@host:port/database URL; the password goes in the Secret named by postgres.existingSecret, not in the URL)" }}
{{- end }}
{{- if and .Values.tls.clientAuth (not .Values.tls.existingSecret) }}
{{- fail "tls.clientAuth needs tls.existingSecret: the client CA is that Secret's ca.crt" }}
{{- end }}
{{- if and .Values.tls.clientAuth (eq (include "toolscore.tlsOn" (list . "http")) "true") }}
{{- range $probe := list "startupProbe" "livenessProbe" "readinessProbe" }}
{{- if not (include "toolscore.ownProbeHandler" (get $.Values $probe)) }}
{{- fail (printf "tls.clientAuth with the HTTP API on TLS (tls.listeners.http): the kubelet presents no client certificate, so %s's HTTPS GET would fail and the pod never start; give the three probes handlers of your own (e.g. tcpSocket: {port: http}) or set tls.listeners.http: false (the HTTP API then plaintext, with auth tokens still)" $probe) }}
{{- end }}
{{- end }}
{{- end }}
{{- if .Values.auth.existingSecret }}
{{- $scopes := include "toolscore.tokenScopes" . | fromYamlArray }}
{{- $needs := dict "otlpGrpc" (list "ingest") "otlpHttp" (list "ingest") "http" (list "read" "evaluate" "metrics") "grpc" (list "read") }}
{{- range $key := list "otlpGrpc" "otlpHttp" "http" "grpc" }}
{{- if eq (include "toolscore.authOn" (list $ $key)) "true" }}
{{- $served := false }}
{{- range $scope := get $needs $key }}
{{- if has $scope $scopes }}{{ $served = true }}{{ end }}
{{- end }}
{{- if not $served }}
{{- fail (printf "auth.listeners.%s is on but no token has the scope it needs (%s): every request to it would be refused. Name the Secret's key in auth.tokenKeys (or add a token in config.auth.tokens), or set auth.listeners.%s: false" $key (join " or " (get $needs $key)) $key) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.serviceMonitor.enabled (not .Values.auth.publicMetrics) (eq (include "toolscore.authOn" (list . "http")) "true") (not .Values.serviceMonitor.authorization) (not .Values.auth.tokenKeys.metrics) }}
{{- fail "auth.publicMetrics is false, so /metrics needs a token with the metrics scope, and the ServiceMonitor has none: set auth.tokenKeys.metrics (the ServiceMonitor sends that key of auth.existingSecret) or serviceMonitor.authorization" }}
{{- end }}
{{- end }}
{{- $strategy := dig "type" "" .Values.updateStrategy }}
{{- $statefulSet := eq (include "toolscore.statefulSet" .) "true" }}
{{- if and $statefulSet (eq $strategy "Recreate") }}
{{- fail "updateStrategy.type: Recreate is a Deployment strategy; with config.store.backend: sqlite and persistence.enabled the chart runs a StatefulSet (RollingUpdate or OnDelete)" }}
{{- end }}
{{- if and (not $statefulSet) (eq $strategy "OnDelete") }}
{{- fail "updateStrategy.type: OnDelete is a StatefulSet strategy; the chart runs a Deployment (RollingUpdate or Recreate) unless config.store.backend is sqlite with persistence.enabled" }}
{{- end }}
{{- end }}

{{/*
A probe: the values' Probe object, with `httpGet` on the API port at the
given path unless it names a handler of its own. (list $probe "/healthz")
*/}}
{{- define "toolscore.probe" -}}
{{- $probe := deepCopy (index . 0) }}
{{- if not (or $probe.httpGet $probe.tcpSocket $probe.grpc $probe.exec) }}
{{- $_ := set $probe "httpGet" (dict "path" (index . 1) "port" "http") }}
{{- if eq (index . 2) "true" }}
{{- $_ := set $probe.httpGet "scheme" "HTTPS" }}
{{- end }}
{{- end }}
{{- toYaml $probe }}
{{- end }}

{{/*
"true" when a probe (a Probe object of the values) has a handler of the
user's own, which the chart leaves as it is.
*/}}
{{- define "toolscore.ownProbeHandler" -}}
{{- if or .httpGet .tcpSocket .grpc .exec }}true{{ end }}
{{- end }}

{{/*
Where the pod mounts `tls.existingSecret` and `auth.existingSecret`: whole
Secrets as directories (never subPath, which never sees a Secret change).
*/}}
{{- define "toolscore.tlsDir" -}}
/etc/toolscore/tls
{{- end }}

{{- define "toolscore.authDir" -}}
/etc/toolscore/auth
{{- end }}

{{/*
"true" when a listener (a key of `ports`: otlpGrpc, otlpHttp, http, grpc)
serves TLS: (list $ "http").
*/}}
{{- define "toolscore.tlsOn" -}}
{{- $root := index . 0 }}
{{- if and $root.Values.tls.existingSecret (index $root.Values.tls.listeners (index . 1)) }}true{{ end }}
{{- end }}

{{/*
"true" when a listener (a key of `ports`) needs a bearer token.
*/}}
{{- define "toolscore.authOn" -}}
{{- $root := index . 0 }}
{{- if and $root.Values.auth.existingSecret (index $root.Values.auth.listeners (index . 1)) }}true{{ end }}
{{- end }}

{{/*
The `tls:` block of a TLS listener: the mounted Secret's files, which the
chart owns (the block's other keys may come from `config`).
*/}}
{{- define "toolscore.tlsBlock" -}}
{{- $dir := include "toolscore.tlsDir" . }}
cert_file: {{ printf "%s/tls.crt" $dir }}
key_file: {{ printf "%s/tls.key" $dir }}
min_version: {{ toString .Values.tls.minVersion | quote }}
{{- if .Values.tls.clientAuth }}
client_ca_file: {{ printf "%s/ca.crt" $dir }}
{{- end }}
{{- end }}

{{/*
`auth.tokens` of the rendered config, as a YAML list: one entry per key of
`auth.existingSecret` named in `auth.tokenKeys`, with every scope naming it.
*/}}
{{- define "toolscore.authTokens" -}}
{{- $dir := include "toolscore.authDir" . }}
{{- $keys := list }}
{{- $scopes := dict }}
{{- range $scope := list "ingest" "read" "evaluate" "metrics" }}
{{- $key := toString (get $.Values.auth.tokenKeys $scope) }}
{{- if $key }}
{{- if not (hasKey $scopes $key) }}
{{- $keys = append $keys $key }}
{{- $_ := set $scopes $key (list) }}
{{- end }}
{{- $_ := set $scopes $key (append (get $scopes $key) $scope) }}
{{- end }}
{{- end }}
{{- $tokens := list }}
{{- range $key := $keys }}
{{- $tokens = append $tokens (dict "name" (printf "secret-%s" $key) "file" (printf "%s/%s" $dir $key) "scopes" (get $scopes $key)) }}
{{- end }}
{{- toYaml $tokens }}
{{- end }}

{{/*
The scopes some token has: the chart's token files and config.auth.tokens.
*/}}
{{- define "toolscore.tokenScopes" -}}
{{- $scopes := list }}
{{- range $scope := list "ingest" "read" "evaluate" "metrics" }}
{{- if get $.Values.auth.tokenKeys $scope }}
{{- $scopes = append $scopes $scope }}
{{- end }}
{{- end }}
{{- range $token := dig "auth" "tokens" (list) (deepCopy .Values.config) | default (list) }}
{{- if kindIs "map" $token }}
{{- $scopes = concat $scopes (default (list) $token.scopes) }}
{{- end }}
{{- end }}
{{- toYaml (uniq $scopes) }}
{{- end }}

{{/*
Pod annotations that roll the pods when the configuration or the mounted
files change.
*/}}
{{- define "toolscore.checksum" -}}
{{- print (include "toolscore.config" .) (toJson .Values.evaluators) (toJson .Values.evalSets) | sha256sum }}
{{- end }}

{{/*
"true" when the workload is a StatefulSet: the SQLite backend with
persistence, a PersistentVolumeClaim for the results file (one replica: the
chart refuses several without PostgreSQL). With postgres (any replicaCount),
memory, or SQLite in an emptyDir, a Deployment.
*/}}
{{- define "toolscore.statefulSet" -}}
{{- if and (eq (include "toolscore.backend" .) "sqlite") .Values.persistence.enabled }}true{{ end }}
{{- end }}

{{/*
"true" when the pod has the data volume at /var/lib/toolscore: the SQLite
backend keeps its file there, and the write-ahead log (on unless
`config.wal.enabled` is false) its segments.
*/}}
{{- define "toolscore.dataVolume" -}}
{{- if or (eq (include "toolscore.backend" .) "sqlite") (eq (include "toolscore.wal" .) "true") }}true{{ end }}
{{- end }}

{{/*
"true" when the write-ahead log is on (toolscore's default).
*/}}
{{- define "toolscore.wal" -}}
{{- include "toolscore.configValue" (list .Values.config (list "wal" "enabled") true) }}
{{- end }}
