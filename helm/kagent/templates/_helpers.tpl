{{/* Names */}}
{{- define "kagent.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "kagent.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "kagent.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Selector labels of one component: (dict "root" $ "component" "judge") */}}
{{- define "kagent.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kagent.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{/* Every label of one component's objects: (dict "root" $ "component" "judge") */}}
{{- define "kagent.labels" -}}
{{ include "kagent.selectorLabels" . }}
helm.sh/chart: {{ include "kagent.chart" .root }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: kagent
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "kagent.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "kagent.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* Images */}}
{{- define "kagent.image" -}}
{{- $img := index .root.Values.image .which -}}
{{- printf "%s%s:%s" .root.Values.image.registry $img.repository (default .root.Chart.AppVersion $img.tag) -}}
{{- end -}}

{{/* Secret names */}}
{{- define "kagent.internalTokenSecret" -}}
{{- default (printf "%s-internal-token" (include "kagent.fullname" .)) .Values.internalToken.existingSecret -}}
{{- end -}}
{{- define "kagent.authSecret" -}}
{{- default (printf "%s-api-tokens" (include "kagent.fullname" .)) .Values.auth.existingSecret -}}
{{- end -}}
{{- define "kagent.llmSecret" -}}
{{- default (printf "%s-llm" (include "kagent.fullname" .)) .Values.llm.existingSecret -}}
{{- end -}}
{{- define "kagent.postgresSecret" -}}
{{- default (printf "%s-postgres" (include "kagent.fullname" .)) .Values.storage.postgres.existingSecret -}}
{{- end -}}
{{- define "kagent.hasLlmSecret" -}}
{{- if or .Values.llm.existingSecret .Values.llm.apiKeys -}}true{{- end -}}
{{- end -}}

{{/* Service addresses (host:port) */}}
{{- define "kagent.address" -}}
{{- printf "%s-%s:%d" (include "kagent.fullname" .root) .component (int .root.Values.ports.grpc) -}}
{{- end -}}

{{/* terminationGracePeriodSeconds of a component: (dict "root" $ "c" .Values.judge) */}}
{{- define "kagent.terminationGrace" -}}
{{- add (int .root.Values.shutdown.preStopSeconds) (int .c.drainSeconds) (int .c.shutdownGraceSeconds) (int .root.Values.shutdown.marginSeconds) -}}
{{- end -}}

{{/* The flags every service takes: (dict "root" $ "c" .Values.judge) */}}
{{- define "kagent.commonArgs" -}}
- --listen=0.0.0.0:{{ int .root.Values.ports.grpc }}
- --metrics-listen=0.0.0.0:{{ int .root.Values.ports.metrics }}
- --drain-seconds={{ int .c.drainSeconds }}
- --shutdown-grace-seconds={{ int .c.shutdownGraceSeconds }}
- --log-level={{ .root.Values.logLevel }}
{{- if .root.Values.auth.enabled }}
- --tokens-file=/etc/kagent/auth/{{ .root.Values.auth.secretKey }}
{{- end }}
{{- end -}}

{{/* Environment every service gets (the internal token from its Secret) */}}
{{- define "kagent.commonEnv" -}}
- name: KAGENT_INTERNAL_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "kagent.internalTokenSecret" . }}
      key: {{ .Values.internalToken.secretKey }}
- name: HOME
  value: /tmp
{{- end -}}

{{/* Container ports, probes and preStop of every service */}}
{{- define "kagent.containerBasics" -}}
ports:
  - name: grpc
    containerPort: {{ int .Values.ports.grpc }}
    protocol: TCP
  - name: metrics
    containerPort: {{ int .Values.ports.metrics }}
    protocol: TCP
startupProbe:
  grpc:
    port: {{ int .Values.ports.grpc }}
    service: kagent.liveness
  periodSeconds: 5
  failureThreshold: 60
livenessProbe:
  grpc:
    port: {{ int .Values.ports.grpc }}
    service: kagent.liveness
  periodSeconds: 10
  timeoutSeconds: 5
  failureThreshold: 3
readinessProbe:
  grpc:
    port: {{ int .Values.ports.grpc }}
    service: ""
  periodSeconds: 5
  timeoutSeconds: 3
  failureThreshold: 2
lifecycle:
  preStop:
    exec:
      command: ["sleep", "{{ int .Values.shutdown.preStopSeconds }}"]
{{- end -}}

{{/* Volume mounts and volumes every service gets */}}
{{- define "kagent.commonMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.auth.enabled }}
- name: api-tokens
  mountPath: /etc/kagent/auth
  readOnly: true
{{- end }}
{{- end -}}
{{- define "kagent.commonVolumes" -}}
- name: tmp
  emptyDir: {}
{{- if .Values.auth.enabled }}
- name: api-tokens
  secret:
    secretName: {{ include "kagent.authSecret" . }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{/* Pod-level settings shared by every pod */}}
{{- define "kagent.podCommon" -}}
serviceAccountName: {{ include "kagent.serviceAccountName" . }}
automountServiceAccountToken: {{ .Values.serviceAccount.automountToken }}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Restarts pods when the values behind their Secrets change (not the generated token). */}}
{{- define "kagent.secretsChecksum" -}}
{{- toJson (list .Values.auth .Values.internalToken .Values.llm .Values.storage.postgres) | sha256sum -}}
{{- end -}}
