//! Peer gateways, installed on first use into the tool cache
//! (`~/.cache/graphfleet/tools/<peer>-<version>/`), keyed by version.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::command::{Command, Slots};
use crate::process::sh_quote;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peer {
    HiveRouter,
    ApolloRouter,
    HiveGateway,
    ApolloGateway,
}

/// Installs are bounded: a cargo build of a router takes ~15 min on 2 cores.
const INSTALL_LIMIT: Duration = Duration::from_secs(60 * 60);

impl Peer {
    pub fn name(self) -> &'static str {
        match self {
            Peer::HiveRouter => "hive-router",
            Peer::ApolloRouter => "apollo-router",
            Peer::HiveGateway => "hive-gateway",
            Peer::ApolloGateway => "apollo-gateway",
        }
    }

    pub fn default_version(self) -> &'static str {
        match self {
            Peer::HiveRouter => "0.3.10",
            Peer::ApolloRouter => "2.17.0",
            Peer::HiveGateway => "2.15.1",
            Peer::ApolloGateway => "2.14.4",
        }
    }

    /// The file whose presence marks a finished install.
    fn marker(self, dir: &Path) -> PathBuf {
        match self {
            Peer::HiveRouter => dir.join("bin/hive_router"),
            Peer::ApolloRouter => dir.join("bin/router"),
            Peer::HiveGateway => dir.join("node_modules/@graphql-hive/gateway/dist/bin.js"),
            Peer::ApolloGateway => dir.join("node_modules/@apollo/gateway/package.json"),
        }
    }

    /// The start command for an install directory.
    pub fn command(self, dir: &Path, slots: &Slots<'_>, threads: &str) -> Command {
        let q = |p: &Path| sh_quote(&p.to_string_lossy());
        let supergraph = q(slots.supergraph);
        let host = sh_quote(slots.host);
        let port = slots.port.to_string();
        match self {
            Peer::HiveRouter => Command {
                line: q(&dir.join("bin/hive_router")),
                env: vec![
                    (
                        "SUPERGRAPH_FILE_PATH".into(),
                        slots.supergraph.to_string_lossy().into_owned(),
                    ),
                    ("HOST".into(), slots.host.into()),
                    ("PORT".into(), port),
                    ("ROUTER_HTTP_WORKERS".into(), threads.into()),
                    ("LOG_LEVEL".into(), "warn".into()),
                ],
                cwd: Some(dir.to_path_buf()),
            },
            Peer::ApolloRouter => Command {
                line: format!(
                    "{} --supergraph {supergraph} --listen {}",
                    q(&dir.join("bin/router")),
                    sh_quote(&format!("{}:{}", slots.host, slots.port))
                ),
                env: vec![("APOLLO_TELEMETRY_DISABLED".into(), "true".into())],
                cwd: Some(dir.to_path_buf()),
            },
            Peer::HiveGateway => Command {
                line: format!(
                    "node {} supergraph {supergraph} --host {host} --port {port}",
                    q(&self.marker(dir))
                ),
                env: vec![("NODE_ENV".into(), "production".into())],
                cwd: Some(dir.to_path_buf()),
            },
            Peer::ApolloGateway => Command {
                line: format!(
                    "node {} {supergraph} {host} {port}",
                    q(&dir.join("server.mjs"))
                ),
                env: vec![("NODE_ENV".into(), "production".into())],
                cwd: Some(dir.to_path_buf()),
            },
        }
    }

    /// The install directory, installing first when it is not there yet.
    pub async fn ensure(self, version: &str, repo: &Path) -> anyhow::Result<PathBuf> {
        if version.is_empty()
            || !version
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || ".-+".contains(c))
        {
            bail!("{}: invalid version {version:?}", self.name());
        }
        let tools = crate::paths::tools_dir()?;
        let dir = tools.join(format!("{}-{version}", self.name()));
        if self.marker(&dir).is_file() {
            return Ok(dir);
        }
        let logs = tools.join("logs");
        std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
        let log = logs.join(format!("{}-{version}.log", self.name()));
        let _ = std::fs::remove_file(&log);
        let staging = tools.join(format!(
            "{}-{version}.partial.{}",
            self.name(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging)
            .with_context(|| format!("creating {}", staging.display()))?;
        eprintln!(
            "[bench] installing {} {version} into {} (log: {}){}",
            self.name(),
            dir.display(),
            log.display(),
            match self {
                Peer::HiveRouter | Peer::ApolloRouter => "; a cargo build, ~15 min on 2 cores",
                _ => "",
            }
        );
        let start = Instant::now();
        let result = self.install(version, &staging, &log, repo, &tools).await;
        if let Err(e) = result {
            let _ = std::fs::remove_dir_all(&staging);
            bail!(
                "failed to install {} {version}: {e:#} (log: {})\n{}",
                self.name(),
                log.display(),
                crate::process::log_tail(&log, 8)
            );
        }
        if !self.marker(&staging).is_file() {
            let _ = std::fs::remove_dir_all(&staging);
            bail!(
                "failed to install {} {version}: the install produced no {}",
                self.name(),
                self.marker(&dir).display()
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::rename(&staging, &dir)
            .with_context(|| format!("moving {} into place", dir.display()))?;
        eprintln!(
            "[bench] installed {} {version} in {:.0} s",
            self.name(),
            start.elapsed().as_secs_f64()
        );
        Ok(dir)
    }

    async fn install(
        self,
        version: &str,
        dir: &Path,
        log: &Path,
        repo: &Path,
        tools: &Path,
    ) -> anyhow::Result<()> {
        let root = dir.to_string_lossy().into_owned();
        match self {
            Peer::HiveRouter => {
                let spec = format!("hive-router@{version}");
                let args = [
                    "install",
                    &spec,
                    "--locked",
                    "--ignore-rust-version",
                    "--features",
                    "graphiql",
                    "--root",
                    &root,
                ];
                run("cargo", &args, &[], None, log).await
            }
            Peer::ApolloRouter => {
                let protoc = protoc(tools, log).await?;
                let spec = format!("apollo-router@{version}");
                let args = ["install", &spec, "--locked", "--root", &root];
                run("cargo", &args, &protoc, None, log).await
            }
            Peer::HiveGateway | Peer::ApolloGateway => {
                let source = repo.join("bench/runner/peers").join(self.name());
                for entry in std::fs::read_dir(&source)
                    .with_context(|| format!("reading {}", source.display()))?
                {
                    let entry = entry.context("listing peer files")?;
                    std::fs::copy(entry.path(), dir.join(entry.file_name()))
                        .with_context(|| format!("copying {}", entry.path().display()))?;
                }
                let package = match self {
                    Peer::HiveGateway => "@graphql-hive/gateway",
                    _ => "@apollo/gateway",
                };
                let pinned = self.default_version();
                if version != pinned {
                    // Another version than the committed lock file: resolve afresh.
                    let manifest = dir.join("package.json");
                    let text =
                        std::fs::read_to_string(&manifest).context("reading package.json")?;
                    let text = text.replace(
                        &format!("\"{package}\": \"{pinned}\""),
                        &format!("\"{package}\": \"{version}\""),
                    );
                    std::fs::write(&manifest, text).context("writing package.json")?;
                    let _ = std::fs::remove_file(dir.join("package-lock.json"));
                }
                let verb = if dir.join("package-lock.json").is_file() {
                    "ci"
                } else {
                    "install"
                };
                run(
                    "npm",
                    &[verb, "--omit=dev", "--no-audit", "--no-fund"],
                    &[],
                    Some(dir),
                    log,
                )
                .await
            }
        }
    }
}

/// Runs one install step with its output appended to `log`, bounded by [`INSTALL_LIMIT`].
async fn run(
    program: &str,
    args: &[&str],
    env: &[(String, String)],
    cwd: Option<&Path>,
    log: &Path,
) -> anyhow::Result<()> {
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    let err = out.try_clone().context("duplicating the log handle")?;
    let mut cmd = tokio::process::Command::new(program);
    cmd.args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let status = tokio::time::timeout(INSTALL_LIMIT, cmd.status())
        .await
        .with_context(|| {
            format!(
                "{program} {} took longer than {INSTALL_LIMIT:?}",
                args.join(" ")
            )
        })?
        .with_context(|| format!("running {program}"))?;
    if !status.success() {
        bail!("{program} {} failed ({status})", args.join(" "));
    }
    Ok(())
}

/// PROTOC (and its includes) for apollo-router's build: protoc on PATH, else Debian's
/// protobuf-compiler unpacked into the tool cache with `apt-get download` + `dpkg -x`.
async fn protoc(tools: &Path, log: &Path) -> anyhow::Result<Vec<(String, String)>> {
    if let Some(p) = crate::paths::which("protoc") {
        return Ok(vec![("PROTOC".into(), p.to_string_lossy().into_owned())]);
    }
    let dir = tools.join("protoc-debian");
    let bin = dir.join("usr/bin/protoc");
    if !bin.is_file() {
        let debs = tools.join("protoc-debian.debs");
        std::fs::create_dir_all(&debs).context("creating the protoc download dir")?;
        let packages = [
            "protobuf-compiler",
            "libprotoc32",
            "libprotobuf32",
            "libprotobuf-dev",
        ];
        let mut args = vec!["download"];
        args.extend(packages);
        run("apt-get", &args, &[], Some(&debs), log).await?;
        for entry in std::fs::read_dir(&debs).context("listing the downloaded packages")? {
            let path = entry.context("listing")?.path();
            if path.extension().is_some_and(|e| e == "deb") {
                let (deb, target) = (
                    path.to_string_lossy().into_owned(),
                    dir.to_string_lossy().into_owned(),
                );
                run("dpkg", &["-x", &deb, &target], &[], None, log).await?;
            }
        }
    }
    if !bin.is_file() {
        bail!(
            "protoc was not found in the unpacked Debian packages ({})",
            bin.display()
        );
    }
    // A wrapper finds the unpacked shared libraries without putting them on every
    // process of the build.
    let wrapper = dir.join("protoc");
    let libdirs: Vec<String> = [
        "usr/lib/x86_64-linux-gnu",
        "usr/lib/aarch64-linux-gnu",
        "usr/lib",
    ]
    .iter()
    .map(|d| dir.join(d).to_string_lossy().into_owned())
    .collect();
    let script = format!(
        "#!/bin/sh\nLD_LIBRARY_PATH={}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}} exec {} \"$@\"\n",
        sh_quote(&libdirs.join(":")),
        sh_quote(&bin.to_string_lossy())
    );
    std::fs::write(&wrapper, script).context("writing the protoc wrapper")?;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755))
        .context("making the protoc wrapper executable")?;
    run(&wrapper.to_string_lossy(), &["--version"], &[], None, log)
        .await
        .context("the unpacked protoc does not run")?;
    Ok(vec![
        ("PROTOC".into(), wrapper.to_string_lossy().into_owned()),
        (
            "PROTOC_INCLUDE".into(),
            dir.join("usr/include").to_string_lossy().into_owned(),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs the Debian archive (apt-get download): run with --ignored.
    #[tokio::test]
    #[ignore = "downloads Debian packages"]
    async fn unpacks_a_working_protoc() {
        let tools =
            std::env::temp_dir().join(format!("graphfleet-bench-protoc-{}", std::process::id()));
        std::fs::create_dir_all(&tools).expect("temp dir");
        let log = tools.join("log");
        let env = protoc(&tools, &log).await.expect("protoc");
        let protoc = &env.iter().find(|(k, _)| k == "PROTOC").expect("PROTOC").1;
        let out = std::process::Command::new(protoc)
            .arg("--version")
            .output()
            .expect("run protoc");
        assert!(
            String::from_utf8_lossy(&out.stdout).starts_with("libprotoc "),
            "{out:?}"
        );
        let include = &env
            .iter()
            .find(|(k, _)| k == "PROTOC_INCLUDE")
            .expect("include")
            .1;
        assert!(
            Path::new(include)
                .join("google/protobuf/any.proto")
                .is_file()
        );
        let _ = std::fs::remove_dir_all(&tools);
    }

    #[tokio::test]
    async fn rejects_a_version_that_is_not_one() {
        let err = Peer::HiveRouter
            .ensure("1.0; rm -rf /", Path::new("."))
            .await
            .expect_err("bad");
        assert!(err.to_string().contains("invalid version"), "{err}");
    }
}
