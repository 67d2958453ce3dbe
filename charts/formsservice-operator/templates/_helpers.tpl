{{/*
Names, labels and small pieces every template shares (cert-manager's layout).
*/}}

{{/* The chart name, or .Values.nameOverride. */}}
{{- define "formsservice-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the release's objects: .Values.fullnameOverride, else "<release>-<chart name>", shortened to
the release name when that already contains the chart name. 63 characters at most (DNS label).
*/}}
{{- define "formsservice-operator.fullname" -}}
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

{{/* "<chart>-<version>" for the helm.sh/chart label. */}}
{{- define "formsservice-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select the manager's pods; never change them (Deployment selectors are immutable). */}}
{{- define "formsservice-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "formsservice-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: manager
{{- end }}

{{/* Labels on every object of the release. */}}
{{- define "formsservice-operator.labels" -}}
app.kubernetes.io/name: {{ include "formsservice-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ include "formsservice-operator.chart" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: formsservice
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of the manager's own objects (Deployment, pods, Services, ServiceAccount). */}}
{{- define "formsservice-operator.managerLabels" -}}
{{ include "formsservice-operator.labels" . }}
app.kubernetes.io/component: manager
{{- end }}

{{/* The ServiceAccount the manager runs as. */}}
{{- define "formsservice-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "formsservice-operator.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The manager's image reference: repository, then @digest when set, else :tag (default appVersion). */}}
{{- define "formsservice-operator.image" -}}
{{- $repo := .Values.image.repository }}
{{- if .Values.image.registry }}
{{- $repo = printf "%s/%s" .Values.image.registry .Values.image.repository }}
{{- end }}
{{- if .Values.image.digest }}
{{- printf "%s@%s" $repo .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag | toString) }}
{{- end }}
{{- end }}

{{/* The services' image (--service-image): serviceImage, falling back to image field by field. */}}
{{- define "formsservice-operator.serviceImage" -}}
{{- $repo := default .Values.image.repository .Values.serviceImage.repository }}
{{- if .Values.image.registry }}
{{- $repo = printf "%s/%s" .Values.image.registry $repo }}
{{- end }}
{{- $digest := .Values.serviceImage.digest }}
{{- if and (not $digest) (not .Values.serviceImage.repository) (not .Values.serviceImage.tag) }}
{{- $digest = .Values.image.digest }}
{{- end }}
{{- if $digest }}
{{- printf "%s@%s" $repo $digest }}
{{- else }}
{{- printf "%s:%s" $repo (.Values.serviceImage.tag | default .Values.image.tag | default .Chart.AppVersion | toString) }}
{{- end }}
{{- end }}

{{/* The namespace of the Grafana dashboard ConfigMap (Grafana's sidecar may watch another namespace). */}}
{{- define "formsservice-operator.dashboardNamespace" -}}
{{- default .Release.Namespace .Values.grafanaDashboard.namespace }}
{{- end }}

{{/*
"true" when a FormsService can be part of the release: the cluster serves the kind, or the CRD is managed
outside the chart (crds.enabled=false; Helm then reports a missing CRD itself). Empty otherwise.
*/}}
{{- define "formsservice-operator.formsServiceServed" -}}
{{- if or (.Capabilities.APIVersions.Has "platform.formsservice.io/v1alpha1/FormsService") (not .Values.crds.enabled) }}true{{ end }}
{{- end }}
