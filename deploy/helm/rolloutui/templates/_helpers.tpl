{{/* The prefix of every object's name. */}}
{{- define "rolloutui.fullname" -}}
{{- .Values.fullnameOverride | default "rolloutui" | trunc 50 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every object: the same as deploy/ (kustomize) plus Helm's own bookkeeping. */}}
{{- define "rolloutui.labels" -}}
app.kubernetes.io/name: rolloutui
app.kubernetes.io/part-of: rolloutui
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "rolloutui.selector" -}}
app.kubernetes.io/name: rolloutui
app.kubernetes.io/component: {{ . }}
{{- end -}}

{{- define "rolloutui.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}

{{- define "rolloutui.redisHost" -}}
{{ include "rolloutui.fullname" . }}-redis:6379
{{- end -}}

{{/* The hosts the dashboard answers to: the Ingress host first, then config.allowedHosts. */}}
{{- define "rolloutui.allowedHosts" -}}
{{- if .Values.ingress.enabled -}}
{{ .Values.ingress.host }},{{ .Values.config.allowedHosts }}
{{- else -}}
{{ .Values.config.allowedHosts }}
{{- end -}}
{{- end -}}

{{/* ROLLOUTUI_TRUSTED_PROXIES: config.trustedProxies, or 1 behind the chart's Ingress, else 0. */}}
{{- define "rolloutui.trustedProxies" -}}
{{- $given := toString .Values.config.trustedProxies -}}
{{- if eq $given "" -}}
{{- if .Values.ingress.enabled -}}1{{- else -}}0{{- end -}}
{{- else if regexMatch "^[0-9]+$" $given -}}
{{- $given -}}
{{- else -}}
{{- fail (printf "config.trustedProxies must be a whole number of proxies (or empty), got %q" $given) -}}
{{- end -}}
{{- end -}}

{{- define "rolloutui.https" -}}
{{- if or .Values.config.https (and .Values.ingress.enabled .Values.ingress.tls.enabled) -}}1{{- else -}}0{{- end -}}
{{- end -}}

{{- define "rolloutui.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: {{ . }}
runAsGroup: {{ . }}
fsGroup: {{ . }}
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{- define "rolloutui.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
{{- end -}}

{{/* The environment of every app container (web, worker, beat, watch). */}}
{{- define "rolloutui.env" -}}
- name: DATABASE_URL
  valueFrom: {secretKeyRef: {name: {{ .Values.secrets.name }}, key: DATABASE_URL}}
- name: ROLLOUTUI_SECRET_KEY
  valueFrom: {secretKeyRef: {name: {{ .Values.secrets.name }}, key: ROLLOUTUI_SECRET_KEY}}
- name: REDIS_PASSWORD
  valueFrom: {secretKeyRef: {name: {{ .Values.secrets.name }}, key: REDIS_PASSWORD}}
- name: REDIS_URL
  value: redis://:$(REDIS_PASSWORD)@{{ include "rolloutui.redisHost" . }}
- name: ROLLOUTUI_ROUTER_REDIS_URL
  value: {{ .Values.config.routerRedisUrl | default (printf "redis://:$(REDIS_PASSWORD)@%s/3" (include "rolloutui.redisHost" .)) | quote }}
- name: ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS
  valueFrom: {secretKeyRef: {name: {{ .Values.secrets.name }}, key: ROLLOUTUI_CHANNELS_ENCRYPTION_KEYS, optional: true}}
- name: POD_NAME
  valueFrom: {fieldRef: {fieldPath: metadata.name}}
- name: POD_NAMESPACE
  valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
- name: PROMETHEUS_MULTIPROC_DIR
  value: /tmp/prometheus
{{- end -}}
