{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "graphfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
Prefix of every object name. It contains the release name, so cluster-scoped objects
(ClusterRole, ClusterRoleBinding) of two releases never collide.
*/}}
{{- define "graphfleet.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "graphfleet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "graphfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "graphfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "graphfleet.labels" -}}
helm.sh/chart: {{ include "graphfleet.chart" . }}
{{ include "graphfleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: graphfleet
{{- end -}}

{{- define "graphfleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "graphfleet.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "graphfleet.operatorImage" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{- define "graphfleet.gatewayImage" -}}
{{- printf "%s:%s" .Values.gatewayImage.repository (default .Chart.AppVersion .Values.gatewayImage.tag) -}}
{{- end -}}

{{- define "graphfleet.leaseName" -}}
{{- default (include "graphfleet.fullname" .) .Values.leaderElection.leaseName -}}
{{- end -}}

{{/*
What the operator does in a namespace it watches, and nothing more (operator/src/controller.rs):
- its controllers list/watch Subgraphs and GraphGateways (and get them) and patch only their status;
- it server-side applies what a GraphGateway owns (patch, plus create for the first apply),
  lists/watches those kinds to re-reconcile on drift, reads the served ConfigMap and the
  Deployment (get), and deletes a PDB or HPA the spec no longer asks for;
- the Subgraph controller reads the ConfigMaps a configMapRef names (covered above);
- kube-runtime's event recorder creates and patches events.k8s.io Events.
LoadTests get rights when the operator grows a LoadTest controller.
*/}}
{{- define "graphfleet.rules" -}}
- apiGroups: ["graphfleet.dev"]
  resources: ["subgraphs", "graphgateways"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["graphfleet.dev"]
  resources: ["subgraphs/status", "graphgateways/status"]
  verbs: ["patch"]
# Owner references with blockOwnerDeletion need this where OwnerReferencesPermissionEnforcement is on.
- apiGroups: ["graphfleet.dev"]
  resources: ["graphgateways/finalizers"]
  verbs: ["update"]
# Delete: supergraph revisions and config files past spec.supergraph.revisionHistoryLimit.
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: ["apps"]
  resources: ["deployments"]
  verbs: ["get", "list", "watch", "create", "patch"]
- apiGroups: ["policy"]
  resources: ["poddisruptionbudgets"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch", "create", "patch", "delete"]
# Each gateway's PodMonitor (its pods' admin port), where the Prometheus Operator is
# installed; deleted when spec.podMonitor.enabled is false.
- apiGroups: ["monitoring.coreos.com"]
  resources: ["podmonitors"]
  verbs: ["get", "create", "patch", "delete"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
# The load-gated canary (spec.rollout.canary.loadTest): each step's LoadTest against the
# canary pods, watched as the gateway's own; those of earlier canaries are deleted.
- apiGroups: ["graphfleet.dev"]
  resources: ["loadtests"]
  verbs: ["get", "list", "watch", "create", "delete"]
{{- end -}}

{{- define "graphfleet.k6Image" -}}
{{- printf "%s:%s" .Values.k6Image.repository (default .Chart.AppVersion .Values.k6Image.tag) -}}
{{- end -}}

{{- define "graphfleet.gatlingImage" -}}
{{- printf "%s:%s" .Values.gatlingImage.repository (default .Chart.AppVersion .Values.gatlingImage.tag) -}}
{{- end -}}
