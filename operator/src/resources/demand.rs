//! The GraphGateway's demand control, in the gateway config file's key names
//! (`demand_control`).

use serde_json::{Map, Value};

use crate::crd::{DemandControlMode, GatewayConfig};

/// Add `demand_control` to the gateway config `root` when `c` sets it.
pub(super) fn demand_sections(root: &mut Map<String, Value>, c: &GatewayConfig) {
    let Some(dc) = &c.demand_control else {
        return;
    };
    let mode = dc.mode.map(|m| {
        Value::from(match m {
            DemandControlMode::Measure => "measure",
            DemandControlMode::Enforce => "enforce",
        })
    });
    let mut section = Map::new();
    for (key, value) in [
        ("enabled", dc.enabled.map(Value::from)),
        ("mode", mode),
        ("max_cost", dc.max_cost.map(Value::from)),
        ("list_size", dc.list_size.map(Value::from)),
        (
            "expose_in_extensions",
            dc.expose_in_extensions.map(Value::from),
        ),
    ] {
        if let Some(value) = value {
            section.insert(key.to_owned(), value);
        }
    }
    if !section.is_empty() {
        root.insert("demand_control".to_owned(), Value::Object(section));
    }
}

#[cfg(test)]
mod tests {
    use crate::crd::{DemandControlMode, DemandControlSpec, GatewayConfig};
    use crate::resources::gateway::tests::{gateway, load_in_container};
    use graphfleet_gateway::config as gateway_config;

    fn load(demand_control: Option<DemandControlSpec>) -> Result<gateway_config::Config, String> {
        let config = GatewayConfig {
            demand_control,
            ..GatewayConfig::default()
        };
        load_in_container(&gateway(config))
    }

    #[test]
    fn demand_control_reaches_the_gateway() {
        let config = load(Some(DemandControlSpec {
            enabled: Some(true),
            mode: Some(DemandControlMode::Enforce),
            max_cost: Some(2500),
            list_size: Some(25),
            expose_in_extensions: Some(true),
        }))
        .expect("the gateway accepts it");
        let dc = config.demand_control;
        assert!(dc.enabled);
        assert_eq!(dc.mode, gateway_config::DemandControlMode::Enforce);
        assert_eq!(dc.max_cost, Some(2500));
        assert_eq!(dc.list_size, 25);
        assert!(dc.expose_in_extensions);
    }

    #[test]
    fn unset_demand_control_keeps_the_gateway_defaults() {
        let unset = load(None).expect("loads").demand_control;
        assert_eq!(unset, gateway_config::DemandControlConfig::default());
        let empty = load(Some(DemandControlSpec::default())).expect("loads");
        assert_eq!(empty.demand_control, unset);
        let measure = load(Some(DemandControlSpec {
            enabled: Some(true),
            ..DemandControlSpec::default()
        }))
        .expect("loads");
        assert_eq!(
            measure.demand_control.mode,
            gateway_config::DemandControlMode::Measure
        );
    }

    #[test]
    fn enforce_without_max_cost_is_refused_naming_the_key() {
        let err = load(Some(DemandControlSpec {
            enabled: Some(true),
            mode: Some(DemandControlMode::Enforce),
            ..DemandControlSpec::default()
        }))
        .expect_err("the gateway refuses it");
        assert!(err.contains("demand_control.max_cost"), "{err}");
    }
}
