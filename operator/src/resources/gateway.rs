//! Pure builders of a GraphGateway's workload (given the supergraph revision to serve): the
//! Deployment, Service, PodDisruptionBudget and HorizontalPodAutoscaler. The ConfigMaps
//! the pods mount are `gateway_revisions`'; names and labels are `gateway_meta`'s.

use std::collections::BTreeMap;

use super::gateway_config::{GatewayConfigFile, gateway_config_file};
use super::gateway_meta::{labels, meta, selector_labels};
use super::gateway_mounts::{Mounted, mounted};
use super::gateway_revisions::{
    CONFIG_KEY, SUPERGRAPH_KEY, config_file_config_map_name, config_hash,
    supergraph_config_map_name,
};
use super::{container_security_context, pod_security_context};
use graphfleet_api::GraphGateway;
use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget, ResourceMetricSource,
};
use k8s_openapi::api::core::v1::{
    ConfigMapVolumeSource, Container, ContainerPort, EnvVar, HTTPGetAction, PodSpec,
    PodTemplateSpec, Probe, ResourceRequirements, Service, ServicePort, ServiceSpec, Volume,
    VolumeMount,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::ResourceExt;

/// Pod-template annotation carrying the supergraph hash: a new hash rolls the pods.
pub const SUPERGRAPH_HASH_ANNOTATION: &str = "graphfleet.dev/supergraph-hash";
/// Pod-template annotation carrying the gateway-config hash.
const CONFIG_HASH_ANNOTATION: &str = "graphfleet.dev/config-hash";
/// Name of the gateway container in the gateway pods.
pub const GATEWAY_CONTAINER: &str = "gateway";
/// Port the gateway listens on inside the pod.
pub const GATEWAY_PORT: i32 = 4000;
/// The port of the gateway's Services (and of its canary Service).
pub const SERVICE_PORT: i32 = 80;
/// Where the pod's supergraph revision is mounted.
pub const SUPERGRAPH_DIR: &str = "/etc/graphfleet/supergraph";
/// Where the pod's gateway config file is mounted.
pub const CONFIG_DIR: &str = "/etc/graphfleet/config";
const SUPERGRAPH_VOLUME: &str = "supergraph";
const CONFIG_VOLUME: &str = "config";
/// The volumes every gateway pod gets from the operator (`spec.mounts` adds its own).
const OPERATOR_VOLUMES: [&str; 4] = [
    SUPERGRAPH_VOLUME,
    CONFIG_VOLUME,
    "tmp",
    super::gateway_usage::USAGE_VOLUME,
];
/// What a GraphGateway's pods are built from besides its spec: the gateway config file
/// and the files `spec.mounts` brings in.
#[derive(Debug, Clone)]
pub struct GatewayPods {
    pub config: GatewayConfigFile,
    pub mounted: Mounted,
}

impl GatewayPods {
    /// The pods' config and mounts, or every problem keeping the gateway from accepting
    /// its config (nothing is applied then).
    pub fn of(gw: &GraphGateway) -> Result<Self, Vec<String>> {
        let mounted = mounted(gw);
        let mut operator_volumes: Vec<String> = OPERATOR_VOLUMES.map(str::to_owned).into();
        operator_volumes.extend(mounted.volumes.iter().map(|v| v.name.clone()));
        let extras = super::gateway_extras::problems(gw, &operator_volumes);
        let config = match gateway_config_file(gw, &mounted) {
            Ok(config) if extras.is_empty() => config,
            Ok(_) => return Err(extras),
            Err(mut problems) => {
                problems.extend(extras);
                return Err(problems);
            }
        };
        Ok(Self { config, mounted })
    }
}

fn default_resources() -> ResourceRequirements {
    let quantities = super::cpu_and_memory;
    ResourceRequirements {
        requests: Some(quantities("1", "256Mi")),
        limits: Some(quantities("1", "512Mi")),
        ..ResourceRequirements::default()
    }
}

fn probe(path: &str, period_seconds: i32, failure_threshold: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            // The admin listener: probes never queue behind client connections, and
            // the GraphQL port serves no health or metrics (admin.listen is set).
            port: IntOrString::String("admin".to_owned()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period_seconds),
        failure_threshold: Some(failure_threshold),
        timeout_seconds: Some(1),
        ..Probe::default()
    }
}

fn gateway_container(gw: &GraphGateway, pods: &GatewayPods, default_image: &str) -> Container {
    let supergraph_path = format!("{SUPERGRAPH_DIR}/{SUPERGRAPH_KEY}");
    Container {
        name: GATEWAY_CONTAINER.to_owned(),
        image: Some(
            gw.spec
                .image
                .clone()
                .unwrap_or_else(|| default_image.to_owned()),
        ),
        args: Some(vec![
            "--supergraph".to_owned(),
            supergraph_path,
            "--listen".to_owned(),
            format!("0.0.0.0:{GATEWAY_PORT}"),
        ]),
        // The operator's variable first; the user's (never GRAPHFLEET_*) after it.
        env: Some(super::gateway_extras::env(
            gw,
            vec![EnvVar {
                name: "GRAPHFLEET_CONFIG".to_owned(),
                value: Some(format!("{CONFIG_DIR}/{CONFIG_KEY}")),
                ..EnvVar::default()
            }],
        )),
        ports: Some(vec![
            ContainerPort {
                name: Some("http".to_owned()),
                container_port: GATEWAY_PORT,
                protocol: Some("TCP".to_owned()),
                ..ContainerPort::default()
            },
            // Read by the operator only (served supergraph, recorded operations).
            ContainerPort {
                name: Some("admin".to_owned()),
                container_port: i32::from(graphfleet_admin_api::DEFAULT_ADMIN_PORT),
                protocol: Some("TCP".to_owned()),
                ..ContainerPort::default()
            },
        ]),
        resources: Some(gw.spec.resources.clone().unwrap_or_else(default_resources)),
        liveness_probe: Some(probe("/health/live", 10, 3)),
        readiness_probe: Some(probe("/health/ready", 2, 2)),
        security_context: Some(container_security_context()),
        // A gateway that fails to start says why in its last log lines; the kubelet keeps
        // them as the termination message, which the GraphGateway's Ready condition quotes.
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        volume_mounts: Some(super::gateway_extras::volume_mounts(
            gw,
            volume_mounts(pods),
        )),
        ..Container::default()
    }
}

/// The supergraph revision, the config file, /tmp, the fleet's usage (for warm-up), and
/// what `spec.mounts` brings in.
fn volume_mounts(pods: &GatewayPods) -> Vec<VolumeMount> {
    let read_only = |name: &str, dir: &str| VolumeMount {
        name: name.to_owned(),
        mount_path: dir.to_owned(),
        read_only: Some(true),
        ..VolumeMount::default()
    };
    let mut mounts = vec![
        read_only(SUPERGRAPH_VOLUME, SUPERGRAPH_DIR),
        read_only(CONFIG_VOLUME, CONFIG_DIR),
        VolumeMount {
            name: "tmp".to_owned(),
            mount_path: "/tmp".to_owned(),
            ..VolumeMount::default()
        },
        super::gateway_usage::usage_volume_mount(),
    ];
    mounts.extend(pods.mounted.mounts.iter().cloned());
    mounts
}

fn volumes(gw: &GraphGateway, pods: &GatewayPods, supergraph_hash: &str) -> Vec<Volume> {
    let gateway = gw.name_any();
    let config_map = |name: &str, config_map: String| Volume {
        name: name.to_owned(),
        config_map: Some(ConfigMapVolumeSource {
            name: config_map,
            ..ConfigMapVolumeSource::default()
        }),
        ..Volume::default()
    };
    let mut volumes = vec![
        config_map(
            SUPERGRAPH_VOLUME,
            supergraph_config_map_name(&gateway, supergraph_hash),
        ),
        config_map(
            CONFIG_VOLUME,
            config_file_config_map_name(&gateway, &config_hash(&pods.config.text)),
        ),
        super::tmp_volume(),
        super::gateway_usage::usage_volume(gw),
    ];
    volumes.extend(pods.mounted.volumes.iter().cloned());
    super::gateway_extras::volumes(gw, volumes)
}

fn pod_spec(
    gw: &GraphGateway,
    pods: &GatewayPods,
    supergraph_hash: &str,
    default_image: &str,
) -> PodSpec {
    let spec = &gw.spec;
    PodSpec {
        containers: vec![gateway_container(gw, pods, default_image)],
        // No placement unless the spec sets one (the benchmark's manifests name the pool).
        node_selector: spec.node_selector.clone(),
        tolerations: spec.tolerations.clone(),
        affinity: spec.affinity.clone(),
        automount_service_account_token: Some(false),
        termination_grace_period_seconds: Some(pods.config.termination_grace_seconds()),
        security_context: Some(pod_security_context()),
        volumes: Some(volumes(gw, pods, supergraph_hash)),
        ..PodSpec::default()
    }
}

fn strategy(gw: &GraphGateway) -> DeploymentStrategy {
    let rollout = gw.spec.rollout.clone().unwrap_or_default();
    DeploymentStrategy {
        type_: Some("RollingUpdate".to_owned()),
        rolling_update: Some(RollingUpdateDeployment {
            max_surge: Some(
                rollout
                    .max_surge
                    .unwrap_or_else(|| IntOrString::String("25%".to_owned())),
            ),
            max_unavailable: Some(rollout.max_unavailable.unwrap_or(IntOrString::Int(0))),
        }),
    }
}

/// The gateway Deployment. Its pod template carries the supergraph and config hashes, so a
/// new supergraph rolls the pods. `replicas` is left to the HPA when autoscaling is on.
/// `default_image` is used when the spec names no image.
pub fn deployment(
    gw: &GraphGateway,
    pods: &GatewayPods,
    supergraph_hash: &str,
    default_image: &str,
) -> Deployment {
    let template_annotations = BTreeMap::from([
        (
            SUPERGRAPH_HASH_ANNOTATION.to_owned(),
            supergraph_hash.to_owned(),
        ),
        (
            CONFIG_HASH_ANNOTATION.to_owned(),
            config_hash(&pods.config.text),
        ),
    ]);
    let mut pod_meta = ObjectMeta {
        labels: Some(labels(gw)),
        annotations: Some(template_annotations),
        ..ObjectMeta::default()
    };
    let mut pod = pod_spec(gw, pods, supergraph_hash, default_image);
    super::pod_options::apply(&gw.spec.pod, &mut pod_meta, &mut pod);
    Deployment {
        metadata: meta(gw, gw.name_any()),
        spec: Some(DeploymentSpec {
            replicas: gw.spec.autoscaling.is_none().then_some(gw.spec.replicas),
            selector: LabelSelector {
                match_labels: Some(selector_labels(gw)),
                ..LabelSelector::default()
            },
            strategy: Some(strategy(gw)),
            min_ready_seconds: gw.spec.rollout.as_ref().and_then(|r| r.min_ready_seconds),
            revision_history_limit: Some(5),
            template: PodTemplateSpec {
                metadata: Some(pod_meta),
                spec: Some(pod),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// The Service in front of the gateway pods (port 80 → the gateway's http port): ClusterIP
/// unless `spec.service.type` says otherwise, with `spec.service.annotations`.
pub fn service(gw: &GraphGateway) -> Service {
    let user = gw.spec.service.clone().unwrap_or_default();
    let mut metadata = meta(gw, gw.name_any());
    metadata.annotations = user.annotations;
    Service {
        metadata,
        spec: Some(ServiceSpec {
            type_: Some(user.type_.unwrap_or_default().as_str().to_owned()),
            selector: Some(selector_labels(gw)),
            ports: Some(vec![ServicePort {
                name: Some("http".to_owned()),
                port: SERVICE_PORT,
                target_port: Some(IntOrString::String("http".to_owned())),
                protocol: Some("TCP".to_owned()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        status: None,
    }
}

/// The PodDisruptionBudget, when the spec asks for one.
pub fn pod_disruption_budget(gw: &GraphGateway) -> Option<PodDisruptionBudget> {
    let pdb = gw.spec.pod_disruption_budget.as_ref()?;
    Some(PodDisruptionBudget {
        metadata: meta(gw, gw.name_any()),
        spec: Some(PodDisruptionBudgetSpec {
            selector: Some(LabelSelector {
                match_labels: Some(selector_labels(gw)),
                ..LabelSelector::default()
            }),
            min_available: pdb.min_available.clone(),
            max_unavailable: pdb.max_unavailable.clone(),
            ..PodDisruptionBudgetSpec::default()
        }),
        status: None,
    })
}

/// The CPU HorizontalPodAutoscaler, when the spec asks for autoscaling.
pub fn horizontal_pod_autoscaler(gw: &GraphGateway) -> Option<HorizontalPodAutoscaler> {
    let scaling = gw.spec.autoscaling.as_ref()?;
    Some(HorizontalPodAutoscaler {
        metadata: meta(gw, gw.name_any()),
        spec: Some(HorizontalPodAutoscalerSpec {
            scale_target_ref: CrossVersionObjectReference {
                api_version: Some("apps/v1".to_owned()),
                kind: "Deployment".to_owned(),
                name: gw.name_any(),
            },
            min_replicas: Some(scaling.min_replicas),
            max_replicas: scaling.max_replicas,
            metrics: Some(vec![MetricSpec {
                type_: "Resource".to_owned(),
                resource: Some(ResourceMetricSource {
                    name: "cpu".to_owned(),
                    target: MetricTarget {
                        type_: "Utilization".to_owned(),
                        average_utilization: Some(scaling.target_cpu_utilization_percentage),
                        ..MetricTarget::default()
                    },
                }),
                ..MetricSpec::default()
            }]),
            ..HorizontalPodAutoscalerSpec::default()
        }),
        status: None,
    })
}
