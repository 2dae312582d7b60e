//! Images of the Rust peers (hive-router, apollo-router) for the local cluster, made by
//! `scripts/images.sh` (the project's one image builder): `build peer-<name>` puts the
//! binary the runner cargo-installed into the tool cache onto the script's local base
//! (cached by content, superseded builds pruned), `import` puts it into the router node's
//! containerd. Nothing is pulled or pushed.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

use crate::peers::Peer;

/// The script's name of a peer's image; `None` for peers that are not one Rust binary.
fn image_name(peer: Peer) -> Option<String> {
    match peer {
        Peer::HiveRouter | Peer::ApolloRouter => Some(format!("peer-{}", peer.name())),
        Peer::HiveGateway | Peer::ApolloGateway => None,
    }
}

/// `build <image> --binary-dir <install dir>/bin --version <version>`.
fn build_args(image: &str, version: &str, install_dir: &Path) -> Vec<OsString> {
    vec![
        "build".into(),
        image.into(),
        "--binary-dir".into(),
        install_dir.join("bin").into(),
        "--version".into(),
        version.into(),
    ]
}

/// The ref `build` printed for a peer (its last line of output).
fn printed_ref(stdout: &str, image: &str) -> anyhow::Result<String> {
    let line = stdout.lines().map(str::trim).rfind(|l| !l.is_empty());
    match line {
        Some(r) if r.starts_with("localhost/graphfleet-bench-") && r.contains(':') => {
            Ok(r.to_owned())
        }
        _ => bail!("scripts/images.sh build {image} printed no image ref: {stdout:?}"),
    }
}

/// Runs scripts/images.sh; its stderr (progress, or why it failed) goes to `log` and, on
/// failure, into the error.
async fn images_sh(script: &Path, args: &[OsString], log: &Path) -> anyhow::Result<String> {
    let shown = args
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let out = tokio::process::Command::new(script)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .with_context(|| format!("running {}", script.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let _ = std::fs::write(log, stderr.as_bytes());
    if !out.status.success() {
        bail!(
            "scripts/images.sh {shown} failed ({}): {}",
            out.status,
            stderr.trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Builds (when its content changed) the image of a Rust peer and imports it into the
/// containerd at `socket` (when the node does not have it yet). Returns the image ref.
/// The script's logs are kept in `work` (`image-<peer>.log`, `import-<peer>.log`).
pub async fn ensure(
    peer: Peer,
    version: &str,
    install_dir: &Path,
    socket: &Path,
    work: &Path,
) -> anyhow::Result<String> {
    let image =
        image_name(peer).with_context(|| format!("{} is not a Rust binary", peer.name()))?;
    let script: PathBuf = crate::paths::repo_root(None)?.join("scripts/images.sh");
    let out = images_sh(
        &script,
        &build_args(&image, version, install_dir),
        &work.join(format!("image-{}.log", peer.name())),
    )
    .await?;
    let reference = printed_ref(&out, &image)?;
    images_sh(
        &script,
        &["import".into(), socket.into(), image.into()],
        &work.join(format!("import-{}.log", peer.name())),
    )
    .await?;
    Ok(reference)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_script_builds_the_peer_from_its_install_dir() {
        assert_eq!(
            image_name(Peer::HiveRouter).expect("a Rust peer"),
            "peer-hive-router"
        );
        assert_eq!(
            image_name(Peer::ApolloRouter).expect("a Rust peer"),
            "peer-apollo-router"
        );
        assert!(image_name(Peer::HiveGateway).is_none());
        let args = build_args(
            "peer-hive-router",
            "0.3.10",
            Path::new("/t/hive-router-0.3.10"),
        );
        assert_eq!(
            args,
            [
                "build",
                "peer-hive-router",
                "--binary-dir",
                "/t/hive-router-0.3.10/bin",
                "--version",
                "0.3.10"
            ]
            .map(OsString::from)
        );
    }

    #[test]
    fn the_ref_is_the_last_line_the_build_printed() {
        let r = "localhost/graphfleet-bench-hive-router:0.3.10-0123456789ab";
        assert_eq!(
            printed_ref(&format!("{r}\n\n"), "peer-hive-router").expect("a ref"),
            r
        );
        assert!(printed_ref("", "peer-hive-router").is_err());
        assert!(printed_ref("something else\n", "peer-hive-router").is_err());
    }
}
