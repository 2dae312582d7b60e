//! Gateways under test: named command templates with `{supergraph}`, `{host}`, `{port}`
//! (and `{set}`) placeholders; built-ins for graphfleet and the peers.

use std::path::Path;

use anyhow::{Context, bail};

pub use crate::command::{Command, Slots};
use crate::peers::Peer;
use crate::process::sh_quote;

/// How to start one gateway.
#[derive(Debug, Clone)]
pub enum Kind {
    Graphfleet,
    Peer(Peer),
    /// A user template: a simple command line with placeholders.
    Custom {
        template: String,
    },
}

#[derive(Debug, Clone)]
pub struct Gateway {
    pub name: String,
    pub label: String,
    pub kind: Kind,
    /// Path of the GraphQL endpoint.
    pub graphql_path: String,
}

const BUILT_INS: &[&str] = &[
    "graphfleet",
    "hive-router",
    "apollo-router",
    "hive-gateway",
    "apollo-gateway",
];

impl Gateway {
    /// A built-in gateway by name.
    pub fn built_in(name: &str) -> anyhow::Result<Gateway> {
        let (label, kind, path) = match name {
            "graphfleet" => ("graphfleet", Kind::Graphfleet, "/graphql"),
            "hive-router" => ("Hive Router", Kind::Peer(Peer::HiveRouter), "/graphql"),
            "apollo-router" => ("Apollo Router", Kind::Peer(Peer::ApolloRouter), "/"),
            "hive-gateway" => ("Hive Gateway", Kind::Peer(Peer::HiveGateway), "/graphql"),
            "apollo-gateway" => ("Apollo Gateway", Kind::Peer(Peer::ApolloGateway), "/"),
            other => bail!(
                "unknown gateway {other:?}: built-ins are {}; define others with --gateway-command NAME=TEMPLATE",
                BUILT_INS.join(", ")
            ),
        };
        Ok(Gateway {
            name: name.to_owned(),
            label: label.to_owned(),
            kind,
            graphql_path: path.to_owned(),
        })
    }

    /// A custom gateway from `NAME=TEMPLATE`.
    pub fn custom(spec: &str) -> anyhow::Result<Gateway> {
        let Some((name, template)) = spec.split_once('=') else {
            bail!("--gateway-command expects NAME=TEMPLATE, got {spec:?}");
        };
        let name = name.trim();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            bail!("gateway name {name:?} must be non-empty [A-Za-z0-9._-]");
        }
        if !template.contains("{port}") {
            bail!("the template of {name:?} has no {{port}} placeholder: {template:?}");
        }
        check_placeholders(template)?;
        Ok(Gateway {
            name: name.to_owned(),
            label: name.to_owned(),
            kind: Kind::Custom {
                template: template.to_owned(),
            },
            graphql_path: "/graphql".into(),
        })
    }

    /// The command that starts this gateway; `bin` is the graphfleet binary or the peer's
    /// install directory (None for custom gateways).
    pub fn command(
        &self,
        bin: Option<&Path>,
        slots: &Slots<'_>,
        cpus: f64,
    ) -> anyhow::Result<Command> {
        let q = |p: &Path| sh_quote(&p.to_string_lossy());
        let addr = format!("{}:{}", slots.host, slots.port);
        let need = || bin.with_context(|| format!("{}: no binary/install directory", self.name));
        let threads = (cpus.ceil() as u32).max(1).to_string();
        let cmd = match &self.kind {
            Kind::Graphfleet => Command {
                line: format!(
                    "{} --supergraph {} --listen {}",
                    q(need()?),
                    q(slots.supergraph),
                    sh_quote(&addr)
                ),
                env: vec![],
                cwd: None,
            },
            Kind::Custom { template } => Command {
                line: fill(template, slots),
                env: vec![],
                cwd: None,
            },
            Kind::Peer(peer) => peer.command(need()?, slots, &threads),
        };
        Ok(cmd)
    }
}

fn check_placeholders(template: &str) -> anyhow::Result<()> {
    let mut rest = template;
    // Bounded by the template length: every iteration consumes a '{'.
    while let Some(i) = rest.find('{') {
        let tail = &rest[i + 1..];
        let end = tail
            .find('}')
            .with_context(|| format!("unclosed '{{' in {template:?}"))?;
        let name = &tail[..end];
        if !["supergraph", "host", "port", "set"].contains(&name) {
            bail!(
                "unknown placeholder {{{name}}} in {template:?} (known: {{supergraph}} {{host}} {{port}} {{set}})"
            );
        }
        rest = &tail[end + 1..];
    }
    Ok(())
}

/// Substitutes the placeholders (shell-quoted).
pub fn fill(template: &str, slots: &Slots<'_>) -> String {
    template
        .replace(
            "{supergraph}",
            &sh_quote(&slots.supergraph.to_string_lossy()),
        )
        .replace("{host}", &sh_quote(slots.host))
        .replace("{port}", &slots.port.to_string())
        .replace("{set}", &sh_quote(slots.set))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots() -> Slots<'static> {
        Slots {
            supergraph: Path::new("/tmp/a b/supergraph.graphql"),
            host: "127.0.0.1",
            port: 4100,
            set: "fed",
        }
    }

    #[test]
    fn fills_a_custom_template() {
        let g =
            Gateway::custom("mono=srv --set {set} --listen {host}:{port} --schema {supergraph}")
                .expect("spec");
        let cmd = g.command(None, &slots(), 1.0).expect("command");
        assert_eq!(
            cmd.line,
            "srv --set fed --listen 127.0.0.1:4100 --schema '/tmp/a b/supergraph.graphql'"
        );
    }

    #[test]
    fn rejects_bad_templates() {
        for (spec, msg) in [
            ("x", "NAME=TEMPLATE"),
            ("=srv {port}", "must be non-empty"),
            ("a=srv", "no {port}"),
            ("a=srv {port} {nope}", "unknown placeholder {nope}"),
            ("a=srv {port} {set", "unclosed"),
        ] {
            let err = Gateway::custom(spec).expect_err(spec).to_string();
            assert!(err.contains(msg), "{spec}: {err}");
        }
    }

    #[test]
    fn built_ins_know_their_endpoint() {
        assert_eq!(
            Gateway::built_in("apollo-router").expect("b").graphql_path,
            "/"
        );
        let g = Gateway::built_in("graphfleet").expect("b");
        let cmd = g
            .command(Some(Path::new("/bin/gw")), &slots(), 1.0)
            .expect("command");
        assert_eq!(
            cmd.line,
            "/bin/gw --supergraph '/tmp/a b/supergraph.graphql' --listen 127.0.0.1:4100"
        );
        assert!(Gateway::built_in("nginx").is_err());
    }
}
