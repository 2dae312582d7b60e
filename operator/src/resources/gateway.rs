//! Pure builders of a GraphGateway's objects (given its composed supergraph): the supergraph
//! ConfigMap, the Deployment, Service, PodDisruptionBudget and HorizontalPodAutoscaler, and
//! the names and labels the controller finds them by.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{
    Deployment, DeploymentSpec, DeploymentStrategy, RollingUpdateDeployment,
};
use k8s_openapi::api::autoscaling::v2::{
    CrossVersionObjectReference, HorizontalPodAutoscaler, HorizontalPodAutoscalerSpec, MetricSpec,
    MetricTarget, ResourceMetricSource,
};
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, ContainerPort, EnvVar, HTTPGetAction, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, Service, ServicePort, ServiceSpec, Toleration,
};
use k8s_openapi::api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::{Resource, ResourceExt};
use serde_json::{Map, Value};

use super::{MANAGER, container_security_context, pod_security_context, short_hash};
use crate::crd::{GraphGateway, POOL_LABEL};

/// Pool the gateway pods land on unless the spec says otherwise.
pub const ROUTER_POOL: &str = "router";
/// Pod-template annotation carrying the supergraph hash: a new hash rolls the pods.
pub const SUPERGRAPH_HASH_ANNOTATION: &str = "graphfleet.dev/supergraph-hash";
/// Pod-template annotation carrying the gateway-config hash.
pub const CONFIG_HASH_ANNOTATION: &str = "graphfleet.dev/config-hash";
/// ConfigMap keys mounted into the gateway.
pub const SUPERGRAPH_KEY: &str = "supergraph.graphql";
pub const CONFIG_KEY: &str = "gateway.json";
/// Seconds a terminating gateway stays listening (but unready) before it drains.
pub const READINESS_DELAY_SECONDS: u32 = 5;
/// Seconds from SIGTERM until a gateway gives up on in-flight requests.
pub const DRAIN_GRACE_SECONDS: u32 = 25;
/// The pod's kill deadline: after the gateway's own grace period.
pub const TERMINATION_GRACE_SECONDS: i64 = 30;
/// Name of the gateway container in the gateway pods.
pub const GATEWAY_CONTAINER: &str = "gateway";
/// Port the gateway listens on inside the pod.
pub const GATEWAY_PORT: i32 = 4000;
const MOUNT_DIR: &str = "/etc/graphfleet";
/// Where the ConfigMap named by `spec.config.persistedDocuments` is mounted (a directory
/// mount, not subPath, so the kubelet updates the file and the gateway reloads it).
pub const PERSISTED_DOCUMENTS_DIR: &str = "/etc/graphfleet-persisted";
const PERSISTED_DOCUMENTS_VOLUME: &str = "persisted-documents";
/// Label naming the GraphGateway a gateway pod belongs to.
pub const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
const NAME_LABEL: &str = "app.kubernetes.io/name";
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
const GATEWAY_APP: &str = "graphfleet-gateway";

/// Name of the ConfigMap holding the supergraph of a gateway.
pub fn config_map_name(gateway: &str) -> String {
    format!("{gateway}-supergraph")
}

/// Labels that select a gateway's pods.
pub fn selector_labels(gw: &GraphGateway) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_owned(), GATEWAY_APP.to_owned()),
        (INSTANCE_LABEL.to_owned(), gw.name_any()),
    ])
}

/// Selects the pods of every GraphGateway the operator manages.
pub fn gateway_pods_selector() -> String {
    format!("{NAME_LABEL}={GATEWAY_APP},{MANAGED_BY_LABEL}={MANAGER}")
}

/// `selector_labels` as a label-selector string (for status and the scale subresource).
pub fn selector_string(gw: &GraphGateway) -> String {
    selector_labels(gw)
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

fn labels(gw: &GraphGateway) -> BTreeMap<String, String> {
    let mut labels = selector_labels(gw);
    labels.insert(MANAGED_BY_LABEL.to_owned(), MANAGER.to_owned());
    labels
}

fn owner(gw: &GraphGateway) -> OwnerReference {
    gw.controller_owner_ref(&())
        .expect("a GraphGateway read from the API server has a name and uid")
}

fn meta(gw: &GraphGateway, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: gw.namespace(),
        labels: Some(labels(gw)),
        owner_references: Some(vec![owner(gw)]),
        ..ObjectMeta::default()
    }
}

/// The gateway config file (`GRAPHFLEET_CONFIG`) in the gateway's own schema, with only
/// the settings the spec sets (the gateway's defaults fill the rest); stable key order.
/// `listen` and `supergraph.path` are passed as flags.
pub fn gateway_config_json(gw: &GraphGateway) -> String {
    let c = &gw.spec.config;
    let mut root = Map::new();
    let ms = |v: Option<u32>| v.map(|ms| Value::String(format!("{ms}ms")));
    section(
        &mut root,
        "traffic",
        [
            ("request_timeout", ms(c.request_timeout_ms)),
            ("subgraph_timeout", ms(c.subgraph_timeout_ms)),
            (
                "deduplicate",
                c.deduplicate_subgraph_requests.map(Value::from),
            ),
            ("http2", c.subgraph_http2.map(http2_name)),
            (
                "compress_requests",
                c.compress_subgraph_requests
                    .map(|e| serde_json::to_value(e).expect("an enum serializes as its name")),
            ),
            (
                "accept_compressed_responses",
                c.accept_compressed_subgraph_responses.map(Value::from),
            ),
        ],
    );
    section(
        &mut root,
        "limits",
        [
            ("max_body_bytes", c.max_request_bytes.map(Value::from)),
            ("max_depth", c.max_query_depth.map(Value::from)),
            ("max_aliases", c.max_aliases.map(Value::from)),
            ("max_root_fields", c.max_root_fields.map(Value::from)),
            ("max_tokens", c.max_tokens.map(Value::from)),
            ("max_height", c.max_height.map(Value::from)),
            ("max_response_bytes", c.max_response_bytes.map(Value::from)),
            ("introspection", c.introspection.map(Value::from)),
        ],
    );
    // Pods: readiness fails at SIGTERM, the listener stays open while endpoints
    // controllers stop routing here, then in-flight requests drain; all within the pod's
    // terminationGracePeriodSeconds.
    section(
        &mut root,
        "shutdown",
        [
            (
                "readiness_delay",
                Some(Value::from(format!("{READINESS_DELAY_SECONDS}s"))),
            ),
            (
                "grace_period",
                Some(Value::from(format!("{DRAIN_GRACE_SECONDS}s"))),
            ),
        ],
    );
    let propagate =
        (!c.propagate_headers.is_empty()).then(|| Value::from(c.propagate_headers.clone()));
    section(&mut root, "headers", [("propagate", propagate)]);
    let mut tracing = Map::new();
    section(
        &mut tracing,
        "tracing",
        [("otlp_endpoint", c.otlp_endpoint.clone().map(Value::from))],
    );
    if !tracing.is_empty() {
        root.insert("telemetry".to_owned(), Value::Object(tracing));
    }
    browser_sections(&mut root, c);
    super::auth::auth_sections(&mut root, c);
    super::routing::routing_sections(&mut root, c);
    super::demand::demand_sections(&mut root, c);
    persisted_sections(&mut root, c);
    super::subscriptions::subscription_sections(&mut root, c);
    serde_json::to_string_pretty(&Value::Object(root)).expect("JSON values always serialize")
}

/// `cors`, `csrf` and `compression`, in the gateway's key names.
fn browser_sections(root: &mut Map<String, Value>, c: &crate::crd::GatewayConfig) {
    let list = |v: &[String]| (!v.is_empty()).then(|| Value::from(v.to_vec()));
    if let Some(cors) = &c.cors {
        section(
            root,
            "cors",
            [
                ("allow_origins", list(&cors.allow_origins)),
                ("allow_origin_patterns", list(&cors.allow_origin_patterns)),
                ("allow_credentials", cors.allow_credentials.map(Value::from)),
                ("allow_methods", list(&cors.allow_methods)),
                ("allow_headers", list(&cors.allow_headers)),
                ("expose_headers", list(&cors.expose_headers)),
                (
                    "max_age",
                    cors.max_age_seconds.map(|s| Value::from(format!("{s}s"))),
                ),
            ],
        );
    }
    if let Some(csrf) = &c.csrf {
        section(
            root,
            "csrf",
            [
                ("enabled", csrf.enabled.map(Value::from)),
                (
                    "required_headers",
                    csrf.required_headers.clone().map(Value::from),
                ),
            ],
        );
    }
    if let Some(compression) = &c.compression {
        let algorithms = (!compression.algorithms.is_empty()).then(|| {
            let names = compression
                .algorithms
                .iter()
                .map(|a| serde_json::to_value(a).expect("an enum serializes as its name"));
            Value::Array(names.collect())
        });
        let level = compression
            .level
            .map(|l| serde_json::to_value(l).expect("an enum serializes as its name"));
        section(
            root,
            "compression",
            [
                ("enabled", compression.enabled.map(Value::from)),
                ("algorithms", algorithms),
                ("min_size", compression.min_size_bytes.map(Value::from)),
                ("level", level),
            ],
        );
    }
}

/// `persisted_documents` (the path where the ConfigMap is mounted) and `apq`.
fn persisted_sections(root: &mut Map<String, Value>, c: &crate::crd::GatewayConfig) {
    use crate::crd::{PersistedDocumentsFormat as F, PersistedDocumentsMode as M};
    let format = |f: F| {
        Value::from(match f {
            F::Auto => "auto",
            F::Apollo => "apollo",
            F::Relay => "relay",
            F::Hive => "hive",
        })
    };
    let mode = |m: M| {
        Value::from(match m {
            M::AllowArbitrary => "allow_arbitrary",
            M::Safelist => "safelist",
            M::RequireId => "require_id",
        })
    };
    if let Some(docs) = &c.persisted_documents {
        let path = format!("{PERSISTED_DOCUMENTS_DIR}/{}", docs.config_map.key);
        section(
            root,
            "persisted_documents",
            [
                ("path", Some(Value::from(path))),
                ("format", docs.format.map(format)),
                ("mode", docs.mode.map(mode)),
            ],
        );
    }
    if let Some(apq) = &c.apq {
        section(
            root,
            "apq",
            [
                ("enabled", apq.enabled.map(Value::from)),
                ("max_entries", apq.max_entries.map(Value::from)),
                ("max_bytes", apq.max_bytes.map(Value::from)),
            ],
        );
    }
}

/// The gateway's name for an `http2` setting (snake case; the CRD's is camel case).
fn http2_name(mode: crate::crd::SubgraphHttp2) -> Value {
    use crate::crd::SubgraphHttp2;
    Value::from(match mode {
        SubgraphHttp2::Disabled => "off",
        SubgraphHttp2::PriorKnowledge => "prior_knowledge",
        SubgraphHttp2::Alpn => "alpn",
    })
}

/// Adds `name: {key: value, ...}` with the set values, or nothing when none is set.
fn section<const N: usize>(
    parent: &mut Map<String, Value>,
    name: &str,
    entries: [(&str, Option<Value>); N],
) {
    let map: Map<String, Value> = entries
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_owned(), v?)))
        .collect();
    if !map.is_empty() {
        parent.insert(name.to_owned(), Value::Object(map));
    }
}

/// The ConfigMap holding the supergraph and the gateway config.
pub fn config_map(gw: &GraphGateway, supergraph_sdl: &str, supergraph_hash: &str) -> ConfigMap {
    let mut meta = meta(gw, config_map_name(&gw.name_any()));
    meta.annotations = Some(BTreeMap::from([(
        SUPERGRAPH_HASH_ANNOTATION.to_owned(),
        supergraph_hash.to_owned(),
    )]));
    ConfigMap {
        metadata: meta,
        data: Some(BTreeMap::from([
            (SUPERGRAPH_KEY.to_owned(), supergraph_sdl.to_owned()),
            (CONFIG_KEY.to_owned(), gateway_config_json(gw)),
        ])),
        ..ConfigMap::default()
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

fn router_pool_tolerations() -> Vec<Toleration> {
    vec![Toleration {
        key: Some(POOL_LABEL.to_owned()),
        operator: Some("Equal".to_owned()),
        value: Some(ROUTER_POOL.to_owned()),
        effect: Some("NoSchedule".to_owned()),
        ..Toleration::default()
    }]
}

fn probe(path: &str, period_seconds: i32, failure_threshold: i32) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String("http".to_owned()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(period_seconds),
        failure_threshold: Some(failure_threshold),
        timeout_seconds: Some(1),
        ..Probe::default()
    }
}

fn gateway_container(gw: &GraphGateway, default_image: &str) -> Container {
    let supergraph_path = format!("{MOUNT_DIR}/{SUPERGRAPH_KEY}");
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
        env: Some(vec![EnvVar {
            name: "GRAPHFLEET_CONFIG".to_owned(),
            value: Some(format!("{MOUNT_DIR}/{CONFIG_KEY}")),
            ..EnvVar::default()
        }]),
        ports: Some(vec![ContainerPort {
            name: Some("http".to_owned()),
            container_port: GATEWAY_PORT,
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }]),
        resources: Some(gw.spec.resources.clone().unwrap_or_else(default_resources)),
        liveness_probe: Some(probe("/health/live", 10, 3)),
        readiness_probe: Some(probe("/health/ready", 2, 2)),
        security_context: Some(container_security_context()),
        // A gateway that fails to start says why in its last log lines; the kubelet keeps
        // them as the termination message, which the GraphGateway's Ready condition quotes.
        termination_message_policy: Some("FallbackToLogsOnError".to_owned()),
        volume_mounts: Some(volume_mounts(gw)),
        ..Container::default()
    }
}

/// The supergraph ConfigMap and /tmp, and the persisted documents ConfigMap when set.
fn volume_mounts(gw: &GraphGateway) -> Vec<k8s_openapi::api::core::v1::VolumeMount> {
    let mut mounts = super::read_only_and_tmp("supergraph", MOUNT_DIR);
    if gw.spec.config.persisted_documents.is_some() {
        mounts.push(k8s_openapi::api::core::v1::VolumeMount {
            name: PERSISTED_DOCUMENTS_VOLUME.to_owned(),
            mount_path: PERSISTED_DOCUMENTS_DIR.to_owned(),
            read_only: Some(true),
            ..Default::default()
        });
    }
    mounts
}

fn volumes(gw: &GraphGateway) -> Vec<k8s_openapi::api::core::v1::Volume> {
    use k8s_openapi::api::core::v1::{ConfigMapVolumeSource, Volume};
    let mut volumes = super::config_map_and_tmp("supergraph", &config_map_name(&gw.name_any()));
    if let Some(docs) = &gw.spec.config.persisted_documents {
        volumes.push(Volume {
            name: PERSISTED_DOCUMENTS_VOLUME.to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: docs.config_map.name.clone(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        });
    }
    volumes
}

fn pod_spec(gw: &GraphGateway, default_image: &str) -> PodSpec {
    let spec = &gw.spec;
    PodSpec {
        containers: vec![gateway_container(gw, default_image)],
        node_selector: Some(
            spec.node_selector.clone().unwrap_or_else(|| {
                BTreeMap::from([(POOL_LABEL.to_owned(), ROUTER_POOL.to_owned())])
            }),
        ),
        tolerations: Some(
            spec.tolerations
                .clone()
                .unwrap_or_else(router_pool_tolerations),
        ),
        affinity: spec.affinity.clone(),
        automount_service_account_token: Some(false),
        termination_grace_period_seconds: Some(TERMINATION_GRACE_SECONDS),
        security_context: Some(pod_security_context()),
        volumes: Some(volumes(gw)),
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
pub fn deployment(gw: &GraphGateway, supergraph_hash: &str, default_image: &str) -> Deployment {
    let template_annotations = BTreeMap::from([
        (
            SUPERGRAPH_HASH_ANNOTATION.to_owned(),
            supergraph_hash.to_owned(),
        ),
        (
            CONFIG_HASH_ANNOTATION.to_owned(),
            short_hash(gateway_config_json(gw).as_bytes()),
        ),
    ]);
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
                metadata: Some(ObjectMeta {
                    labels: Some(labels(gw)),
                    annotations: Some(template_annotations),
                    ..ObjectMeta::default()
                }),
                spec: Some(super::auth::with_jwks_volumes(
                    gw,
                    pod_spec(gw, default_image),
                )),
            },
            ..DeploymentSpec::default()
        }),
        status: None,
    }
}

/// ClusterIP Service in front of the gateway pods (port 80 → the gateway's http port).
pub fn service(gw: &GraphGateway) -> Service {
    Service {
        metadata: meta(gw, gw.name_any()),
        spec: Some(ServiceSpec {
            selector: Some(selector_labels(gw)),
            ports: Some(vec![ServicePort {
                name: Some("http".to_owned()),
                port: 80,
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::crd::{
        ApqSpec, CompressionAlgorithm, CompressionLevel, CompressionSpec, ConfigMapKey, CorsSpec,
        CsrfSpec, GatewayConfig, GraphGatewaySpec, PersistedDocumentsFormat,
        PersistedDocumentsMode, PersistedDocumentsSpec, SubgraphHttp2, SubgraphRequestCompression,
    };
    use graphfleet_gateway::config as gateway_config;
    use std::time::Duration;

    /// A GraphGateway `edge` in namespace `shop` with `config`.
    pub(crate) fn gateway(config: GatewayConfig) -> GraphGateway {
        let spec: GraphGatewaySpec =
            serde_json::from_value(serde_json::json!({})).expect("an empty spec is valid");
        let mut gw = GraphGateway::new("edge", GraphGatewaySpec { config, ..spec });
        gw.metadata.namespace = Some("shop".to_owned());
        gw.metadata.uid = Some("0000-uid".to_owned());
        gw
    }

    fn full() -> GatewayConfig {
        GatewayConfig {
            request_timeout_ms: Some(1500),
            subgraph_timeout_ms: Some(700),
            deduplicate_subgraph_requests: Some(true),
            subgraph_http2: Some(SubgraphHttp2::PriorKnowledge),
            compress_subgraph_requests: Some(SubgraphRequestCompression::Zstd),
            accept_compressed_subgraph_responses: Some(true),
            max_request_bytes: Some(1_000_000),
            max_query_depth: Some(12),
            max_aliases: Some(40),
            max_root_fields: Some(8),
            max_tokens: Some(4000),
            max_height: Some(900),
            max_response_bytes: Some(8_000_000),
            propagate_headers: vec!["x-request-id".to_owned(), "x-tenant".to_owned()],
            introspection: Some(false),
            otlp_endpoint: Some("http://otel-collector.observability:4317".to_owned()),
            cors: Some(CorsSpec {
                allow_origins: vec!["https://app.example.com".to_owned()],
                allow_origin_patterns: vec![
                    r"https://[a-z0-9-]+\.preview\.example\.com".to_owned(),
                ],
                allow_credentials: Some(true),
                allow_methods: vec!["GET".to_owned(), "POST".to_owned()],
                allow_headers: vec!["content-type".to_owned(), "authorization".to_owned()],
                expose_headers: vec!["x-request-id".to_owned()],
                max_age_seconds: Some(600),
            }),
            csrf: Some(CsrfSpec {
                enabled: Some(true),
                required_headers: Some(vec!["graphql-client-name".to_owned()]),
            }),
            compression: Some(CompressionSpec {
                enabled: Some(true),
                algorithms: vec![CompressionAlgorithm::Zstd, CompressionAlgorithm::Gzip],
                min_size_bytes: Some(2048),
                level: Some(CompressionLevel::Fastest),
            }),
            // Set apart in resources::auth's tests: they need the mounted JWKS.
            authentication: None,
            authorization: None,
            // Set apart in header_rules_and_override_labels_reach_the_gateway.
            header_rules: Vec::new(),
            subgraph_header_rules: Vec::new(),
            progressive_override: None,
            // Set apart in resources::demand's tests.
            demand_control: None,
            // Set apart in persisted_documents_mount_and_keys: it needs the mounted file.
            persisted_documents: None,
            apq: Some(ApqSpec {
                enabled: Some(false),
                max_entries: Some(500),
                max_bytes: Some(1_000_000),
            }),
            // Set apart in resources::subscriptions' tests.
            subscriptions: None,
        }
    }

    /// Loads the config exactly as the gateway container would: its args, its
    /// environment, and the rendered file at the path `GRAPHFLEET_CONFIG` names.
    pub(crate) fn load_in_container(gw: &GraphGateway) -> Result<gateway_config::Config, String> {
        let dir = std::env::temp_dir().join(format!(
            "graphfleet-operator-config-{}-{}",
            std::process::id(),
            short_hash(gateway_config_json(gw).as_bytes())
        ));
        std::fs::create_dir_all(&dir).expect("create a temp dir");
        let file = dir.join(CONFIG_KEY);
        std::fs::write(&file, gateway_config_json(gw)).expect("write the config file");
        let container = gateway_container(gw, "image");
        let env = container
            .env
            .unwrap_or_default()
            .into_iter()
            .map(|e| {
                let value = e.value.unwrap_or_default();
                let value = if e.name == gateway_config::CONFIG_ENV {
                    assert_eq!(value, format!("{MOUNT_DIR}/{CONFIG_KEY}"));
                    file.to_string_lossy().into_owned()
                } else {
                    value
                };
                (e.name, value)
            })
            .collect();
        let cli = gateway_config::parse_args(container.args.unwrap_or_default())
            .map_err(|e| e.to_string())?;
        let loaded = gateway_config::load(&gateway_config::Sources {
            file: cli.config_file,
            env,
            flags: cli.overrides,
        });
        let _ = std::fs::remove_dir_all(&dir);
        loaded.map_err(|e| e.to_string())
    }

    #[test]
    fn the_gateway_accepts_the_default_config() {
        let gw = gateway(GatewayConfig::default());
        let config = load_in_container(&gw).expect("the gateway accepts it");
        let defaults = gateway_config::Config::default();
        assert_eq!(config.listen.to_string(), "0.0.0.0:4000");
        // Drains end before the kubelet's kill deadline.
        assert_eq!(config.shutdown.readiness_delay, Duration::from_secs(5));
        assert_eq!(config.shutdown.grace_period, Duration::from_secs(25));
        let pod = deployment(&gw, "hash", "img")
            .spec
            .expect("spec")
            .template
            .spec
            .expect("pod");
        let deadline = pod.termination_grace_period_seconds.expect("set");
        assert!(Duration::from_secs(deadline as u64) > config.shutdown.grace_period);
        assert_eq!(config.limits, defaults.limits);
        assert_eq!(config.traffic, defaults.traffic);
    }

    #[test]
    fn the_gateway_accepts_a_fully_set_config_with_its_values() {
        let config = load_in_container(&gateway(full())).expect("the gateway accepts it");
        assert_eq!(config.traffic.request_timeout, Duration::from_millis(1500));
        assert_eq!(config.traffic.subgraph_timeout, Duration::from_millis(700));
        assert!(config.traffic.deduplicate);
        assert_eq!(
            config.traffic.http2,
            gateway_config::Http2Mode::PriorKnowledge
        );
        assert_eq!(
            config.traffic.compress_requests,
            gateway_config::RequestCompression::Zstd
        );
        assert!(config.traffic.accept_compressed_responses);
        assert_eq!(config.limits.max_body_bytes, 1_000_000);
        assert_eq!(config.limits.max_depth, Some(12));
        assert_eq!(config.limits.max_aliases, Some(40));
        assert_eq!(config.limits.max_root_fields, Some(8));
        assert_eq!(config.limits.max_tokens, Some(4000));
        assert_eq!(config.limits.max_height, Some(900));
        assert_eq!(config.limits.max_response_bytes, 8_000_000);
        assert!(!config.limits.introspection);
        assert_eq!(config.headers.propagate, ["x-request-id", "x-tenant"]);
        assert_eq!(
            config.telemetry.tracing.otlp_endpoint.as_deref(),
            Some("http://otel-collector.observability:4317")
        );
        assert_eq!(
            config.supergraph.path.as_deref(),
            Some(std::path::Path::new("/etc/graphfleet/supergraph.graphql"))
        );
        let cors = &config.cors;
        assert_eq!(cors.allow_origins, ["https://app.example.com"]);
        assert_eq!(
            cors.allow_origin_patterns,
            [r"https://[a-z0-9-]+\.preview\.example\.com"]
        );
        assert!(cors.allow_credentials);
        assert_eq!(cors.allow_methods, ["GET", "POST"]);
        assert_eq!(cors.allow_headers, ["content-type", "authorization"]);
        assert_eq!(cors.expose_headers, ["x-request-id"]);
        assert_eq!(cors.max_age, Some(Duration::from_secs(600)));
        assert!(config.csrf.enabled);
        assert_eq!(config.csrf.required_headers, ["graphql-client-name"]);
        let compression = &config.compression;
        assert!(compression.enabled);
        assert_eq!(
            compression.algorithms,
            [
                gateway_config::CompressionAlgorithm::Zstd,
                gateway_config::CompressionAlgorithm::Gzip
            ]
        );
        assert_eq!(compression.min_size, 2048);
        assert_eq!(compression.level, gateway_config::CompressionLevel::Fastest);
        assert_eq!(
            config.apq,
            gateway_config::ApqConfig {
                enabled: false,
                max_entries: 500,
                max_bytes: 1_000_000,
            }
        );
    }

    #[test]
    fn persisted_documents_mount_and_keys() {
        let spec = GatewayConfig {
            persisted_documents: Some(PersistedDocumentsSpec {
                config_map: ConfigMapKey {
                    name: "storefront-operations".to_owned(),
                    key: "manifest.json".to_owned(),
                },
                format: Some(PersistedDocumentsFormat::Apollo),
                mode: Some(PersistedDocumentsMode::RequireId),
            }),
            ..GatewayConfig::default()
        };
        let gw = gateway(spec);
        let pod = deployment(&gw, "hash", "img")
            .spec
            .expect("spec")
            .template
            .spec
            .expect("pod");
        let volume = pod
            .volumes
            .as_ref()
            .expect("volumes")
            .iter()
            .find(|v| v.name == PERSISTED_DOCUMENTS_VOLUME)
            .expect("the persisted documents volume");
        let source = volume.config_map.as_ref().expect("a ConfigMap volume");
        assert_eq!(source.name, "storefront-operations");
        let mounts = pod.containers[0].volume_mounts.as_ref().expect("mounts");
        let mount = mounts
            .iter()
            .find(|m| m.name == PERSISTED_DOCUMENTS_VOLUME)
            .expect("the persisted documents mount");
        assert_eq!(mount.mount_path, PERSISTED_DOCUMENTS_DIR);
        assert_eq!(mount.read_only, Some(true));
        // A subPath mount would never see the ConfigMap's updates.
        assert_eq!(mount.sub_path, None);
        // The gateway reads the rendered keys: the path with the list file put where
        // the kubelet would put it.
        let rendered = gateway_config_json(&gw);
        let mounted = format!("{PERSISTED_DOCUMENTS_DIR}/manifest.json");
        assert!(
            rendered.contains(&format!("\"path\": \"{mounted}\"")),
            "{rendered}"
        );
        let dir = std::env::temp_dir().join(format!("graphfleet-pd-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let list = dir.join("manifest.json");
        let manifest = r#"{"format":"apollo-persisted-query-manifest","version":1,"operations":[{"id":"a1","name":"A","type":"query","body":"{ a }"}]}"#;
        std::fs::write(&list, manifest).expect("write the list");
        let file = dir.join(CONFIG_KEY);
        std::fs::write(&file, rendered.replace(&mounted, &list.to_string_lossy()))
            .expect("write the config");
        let args = gateway_container(&gw, "img").args.unwrap_or_default();
        let cli = gateway_config::parse_args(args).expect("the container's args parse");
        let config = gateway_config::load(&gateway_config::Sources {
            file: Some(file),
            env: Vec::new(),
            flags: cli.overrides,
        })
        .map_err(|e| e.to_string());
        let _ = std::fs::remove_dir_all(&dir);
        let config = config.expect("the gateway accepts it");
        let docs = &config.persisted_documents;
        assert_eq!(docs.path.as_deref(), Some(list.as_path()));
        assert_eq!(docs.format, gateway_config::ManifestFormat::Apollo);
        assert_eq!(docs.mode, gateway_config::PersistedMode::RequireId);
        assert_eq!(config.apq, gateway_config::ApqConfig::default());
        // Without persisted documents there is no extra volume.
        let plain = deployment(&gateway(GatewayConfig::default()), "hash", "img");
        let volumes = plain
            .spec
            .expect("spec")
            .template
            .spec
            .expect("pod")
            .volumes;
        assert_eq!(volumes.expect("volumes").len(), 2);
    }

    #[test]
    fn unset_browser_settings_keep_the_gateway_defaults() {
        let partial = GatewayConfig {
            cors: Some(CorsSpec::default()),
            csrf: Some(CsrfSpec::default()),
            compression: Some(CompressionSpec {
                enabled: Some(true),
                ..CompressionSpec::default()
            }),
            ..GatewayConfig::default()
        };
        let config = load_in_container(&gateway(partial)).expect("the gateway accepts it");
        let defaults = gateway_config::Config::default();
        assert_eq!(config.cors, defaults.cors, "CORS stays off");
        assert_eq!(config.csrf, defaults.csrf, "CSRF prevention stays on");
        assert_eq!(
            config.compression,
            gateway_config::CompressionConfig {
                enabled: true,
                ..defaults.compression
            }
        );
        let off = GatewayConfig {
            csrf: Some(CsrfSpec {
                enabled: Some(false),
                required_headers: None,
            }),
            ..GatewayConfig::default()
        };
        let config = load_in_container(&gateway(off)).expect("the gateway accepts it");
        assert!(!config.csrf.enabled);
    }

    #[test]
    fn the_gateway_rejects_what_the_crd_schema_cannot_catch() {
        let bad = GatewayConfig {
            propagate_headers: vec!["not a header".to_owned()],
            ..GatewayConfig::default()
        };
        let err = load_in_container(&gateway(bad)).expect_err("bad header name");
        assert!(
            err.contains("headers.propagate.0: \"not a header\" is not a valid HTTP header name"),
            "{err}"
        );
        let bad = GatewayConfig {
            cors: Some(CorsSpec {
                allow_origins: vec!["https://app.example.com/".to_owned()],
                allow_origin_patterns: vec!["(".to_owned()],
                ..CorsSpec::default()
            }),
            ..GatewayConfig::default()
        };
        let err = load_in_container(&gateway(bad)).expect_err("an origin with a path");
        assert!(
            err.contains("cors.allow_origins.0: \"https://app.example.com/\" has a path"),
            "{err}"
        );
        assert!(
            err.contains("cors.allow_origin_patterns.0: \"(\" is not a regular expression"),
            "{err}"
        );
    }

    #[test]
    fn header_rules_and_override_labels_reach_the_gateway() {
        let spec: GatewayConfig = serde_json::from_value(serde_json::json!({
            "propagateHeaders": ["x-tenant"],
            "headerRules": [
                {"propagate": {"named": "x-request-id", "rename": "x-trace-id", "default": "none"}},
                {"insert": {"name": "x-user", "fromClaim": "sub"}},
                {"remove": {"matching": "^x-debug-"}}
            ],
            "subgraphHeaderRules": [
                {"subgraph": "billing", "rules": [{"insert": {"name": "x-caller", "value": "edge"}}]}
            ],
            "progressiveOverride": {"enabledLabels": ["billing-v2"], "disabledLabels": ["percent(5)"]}
        }))
        .expect("a valid spec");
        let config = load_in_container(&gateway(spec)).expect("the gateway accepts it");
        assert_eq!(config.headers.propagate, ["x-tenant"]);
        let rules = &config.headers.rules;
        assert_eq!(rules.len(), 3);
        let propagate = rules[0].propagate.as_ref().expect("a propagate rule");
        assert_eq!(propagate.named.as_deref(), Some("x-request-id"));
        assert_eq!(propagate.rename.as_deref(), Some("x-trace-id"));
        assert_eq!(propagate.default.as_deref(), Some("none"));
        let insert = rules[1].insert.as_ref().expect("an insert rule");
        assert_eq!(
            (insert.name.as_str(), insert.from_claim.as_deref()),
            ("x-user", Some("sub"))
        );
        let remove = rules[2].remove.as_ref().expect("a remove rule");
        assert_eq!(remove.matching.as_deref(), Some("^x-debug-"));
        let billing = &config.subgraphs["billing"].headers;
        let insert = billing[0].insert.as_ref().expect("an insert rule");
        assert_eq!(
            (insert.name.as_str(), insert.value.as_deref()),
            ("x-caller", Some("edge"))
        );
        assert_eq!(config.progressive_override.enabled_labels, ["billing-v2"]);
        assert_eq!(config.progressive_override.disabled_labels, ["percent(5)"]);

        // What the CRD schema cannot check, the gateway refuses with the key's path.
        let bad: GatewayConfig = serde_json::from_value(serde_json::json!({
            "headerRules": [{"remove": {"matching": "^x-("}}]
        }))
        .expect("the schema allows any string");
        let err = load_in_container(&gateway(bad)).expect_err("an invalid regex");
        assert!(
            err.contains("headers.rules.0.remove.matching: not a valid regular expression"),
            "{err}"
        );
    }
}
