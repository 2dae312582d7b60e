//! Images of the Rust peers (hive-router, apollo-router) for the local cluster: the binary
//! the runner cargo-installed into the tool cache, on the same local distroless-like base
//! and podman storage that `scripts/images.sh` builds graphfleet's images with, imported
//! into the router node's containerd. Nothing is pulled or pushed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use crate::peers::Peer;

/// Libraries the base image has (Debian libc6 and libgcc-s1), so a binary's other shared
/// libraries must travel with it.
const IN_BASE: &[&str] = &[
    "linux-vdso.so.1",
    "ld-linux-x86-64.so.2",
    "ld-linux-aarch64.so.1",
    "libc.so.6",
    "libm.so.6",
    "libpthread.so.0",
    "libdl.so.2",
    "librt.so.1",
    "libutil.so.1",
    "libresolv.so.2",
    "libgcc_s.so.1",
];
/// Where the extra libraries go in the image.
const LIB_DIR: &str = "/usr/local/lib/graphfleet-peer";

/// The shared libraries `ldd` lists that the base image lacks (absolute paths on this host).
fn extra_libs(ldd: &str) -> Vec<PathBuf> {
    ldd.lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().split_once(" => ")?;
            if IN_BASE.contains(&name.trim()) {
                return None;
            }
            let path = rest.split_whitespace().next()?;
            path.starts_with('/').then(|| PathBuf::from(path))
        })
        .collect()
}

/// The binary of a Rust peer in its install directory, and its name in the image.
fn peer_binary(peer: Peer, dir: &Path) -> Option<(PathBuf, &'static str)> {
    match peer {
        Peer::HiveRouter => Some((dir.join("bin/hive_router"), "hive_router")),
        Peer::ApolloRouter => Some((dir.join("bin/router"), "router")),
        Peer::HiveGateway | Peer::ApolloGateway => None,
    }
}

/// The Containerfile: the base, the binary, its extra libraries; the base's nonroot user.
fn containerfile(base: &str, binary: &str, libs: &[String]) -> String {
    let mut out = format!("FROM {base}\nCOPY {binary} /usr/local/bin/{binary}\n");
    if !libs.is_empty() {
        out.push_str(&format!(
            "COPY lib/ {LIB_DIR}/\nENV LD_LIBRARY_PATH={LIB_DIR}\n"
        ));
    }
    out.push_str(&format!(
        "USER 65532:65532\nWORKDIR /tmp\nENTRYPOINT [\"/usr/local/bin/{binary}\"]\n"
    ));
    out
}

/// `localhost/graphfleet-bench-<peer>:<version>-<content key>`.
fn image_ref(peer: Peer, version: &str, key: &str) -> String {
    format!(
        "localhost/graphfleet-bench-{}:{version}-{}",
        peer.name(),
        &key[..key.len().min(12)]
    )
}

/// scripts/images.sh's podman configuration (its own storage under the cache).
fn podman_env() -> anyhow::Result<Vec<(String, PathBuf)>> {
    let tools = crate::paths::tools_dir()?;
    let cache = tools.parent().context("the tool cache has no parent")?;
    let dir = cache.join("images/podman");
    let conf = dir.join("containers.conf");
    let storage = dir.join("storage.conf");
    if !conf.is_file() || !storage.is_file() {
        bail!(
            "no podman setup at {} (scripts/images.sh writes it): run scripts/cluster.sh images gateway first",
            dir.display()
        );
    }
    Ok(vec![
        ("CONTAINERS_CONF".into(), conf),
        ("CONTAINERS_STORAGE_CONF".into(), storage),
    ])
}

async fn run(program: &str, args: &[&str], env: &[(String, PathBuf)]) -> anyhow::Result<String> {
    let out = tokio::process::Command::new(program)
        .args(args)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .with_context(|| format!("running {program}"))?;
    if !out.status.success() {
        bail!(
            "{program} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The newest local base image scripts/images.sh made.
async fn base_image(env: &[(String, PathBuf)]) -> anyhow::Result<String> {
    let list = run(
        "podman",
        &[
            "images",
            "--sort",
            "created",
            "--format",
            "{{.Repository}}:{{.Tag}}",
            "--filter",
            "reference=localhost/graphfleet-base",
        ],
        env,
    )
    .await?;
    list.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.ends_with(":<none>"))
        .map(str::to_owned)
        .context("no localhost/graphfleet-base image in scripts/images.sh's podman storage: run scripts/cluster.sh images gateway first")
}

/// Builds (when its content changed) the image of a Rust peer and imports it into the
/// containerd at `socket` (when the node does not have it yet). Returns the image ref.
pub async fn ensure(
    peer: Peer,
    version: &str,
    install_dir: &Path,
    socket: &Path,
    work: &Path,
) -> anyhow::Result<String> {
    let (binary, name) = peer_binary(peer, install_dir)
        .with_context(|| format!("{} is not a Rust binary", peer.name()))?;
    let env = podman_env()?;
    let base = base_image(&env).await?;
    let ldd = run("ldd", &[&binary.to_string_lossy()], &[])
        .await
        .unwrap_or_default();
    let libs = extra_libs(&ldd);
    let ctx = work.join(format!("image-{}", peer.name()));
    let _ = std::fs::remove_dir_all(&ctx);
    std::fs::create_dir_all(ctx.join("lib"))
        .with_context(|| format!("creating {}", ctx.display()))?;
    let mut hash = Sha256::new();
    hash.update(base.as_bytes());
    let bytes = std::fs::read(&binary).with_context(|| format!("reading {}", binary.display()))?;
    hash.update(&bytes);
    // The mode is part of the image (COPY keeps it), so of its key too.
    hash.update(b"mode 0755");
    let staged = ctx.join(name);
    std::fs::write(&staged, &bytes).context("staging the binary")?;
    std::fs::set_permissions(&staged, std::fs::Permissions::from_mode(0o755))
        .context("making the staged binary executable")?;
    let mut lib_names = Vec::new();
    for lib in &libs {
        // Resolve symlinks: the file content goes in under the name the binary asks for.
        let file_name = lib
            .file_name()
            .and_then(|n| n.to_str())
            .context("library without a name")?
            .to_owned();
        let content = std::fs::read(lib).with_context(|| format!("reading {}", lib.display()))?;
        hash.update(file_name.as_bytes());
        hash.update(&content);
        std::fs::write(ctx.join("lib").join(&file_name), content).context("staging a library")?;
        lib_names.push(file_name);
    }
    let file = containerfile(&base, name, &lib_names);
    hash.update(file.as_bytes());
    std::fs::write(ctx.join("Containerfile"), &file).context("writing the Containerfile")?;
    let key: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    let reference = image_ref(peer, version, &key);
    let exists = tokio::process::Command::new("podman")
        .args(["image", "exists", &reference])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .status()
        .await
        .is_ok_and(|s| s.success());
    if !exists {
        eprintln!("[bench] building {reference} (FROM {base}; extra libraries: {lib_names:?})");
        let ctx_s = ctx.to_string_lossy().into_owned();
        run(
            "podman",
            &[
                "build",
                "--pull=never",
                "--network=none",
                "-f",
                &format!("{ctx_s}/Containerfile"),
                "-t",
                &reference,
                &ctx_s,
            ],
            &env,
        )
        .await
        .with_context(|| format!("building the image of {}", peer.name()))?;
    }
    let sock = socket.to_string_lossy().into_owned();
    let have = run(
        "ctr",
        &[
            "-a",
            &sock,
            "-n",
            "k8s.io",
            "images",
            "ls",
            "-q",
            &format!("name=={reference}"),
        ],
        &[],
    )
    .await
    .with_context(|| format!("asking the containerd at {sock} for its images"))?;
    if have.trim().is_empty() {
        let archive = ctx.with_extension("tar");
        let archive_s = archive.to_string_lossy().into_owned();
        let _ = std::fs::remove_file(&archive);
        run(
            "podman",
            &[
                "save",
                "--quiet",
                "--format",
                "oci-archive",
                "-o",
                &archive_s,
                &reference,
            ],
            &env,
        )
        .await?;
        run(
            "ctr",
            &["-a", &sock, "-n", "k8s.io", "images", "import", &archive_s],
            &[],
        )
        .await
        .with_context(|| format!("importing {reference} into {sock}"))?;
        let _ = std::fs::remove_file(&archive);
        eprintln!("[bench] imported {reference} into {sock}");
    }
    let _ = std::fs::remove_dir_all(&ctx);
    prune(peer, &reference, &sock, &env).await;
    Ok(reference)
}

/// Removes this peer's other image builds from podman and the node (superseded content).
async fn prune(peer: Peer, keep: &str, sock: &str, env: &[(String, PathBuf)]) {
    let repo = format!("localhost/graphfleet-bench-{}", peer.name());
    let superseded = |list: String| -> Vec<String> {
        list.lines()
            .map(str::trim)
            .filter(|r| r.starts_with(&format!("{repo}:")) && *r != keep)
            .map(str::to_owned)
            .collect()
    };
    if let Ok(list) = run(
        "podman",
        &[
            "images",
            "--format",
            "{{.Repository}}:{{.Tag}}",
            "--filter",
            &format!("reference={repo}"),
        ],
        env,
    )
    .await
    {
        for old in superseded(list) {
            let _ = run("podman", &["rmi", "--force", &old], env).await;
        }
    }
    if let Ok(list) = run(
        "ctr",
        &["-a", sock, "-n", "k8s.io", "images", "ls", "-q"],
        &[],
    )
    .await
    {
        for old in superseded(list) {
            let _ = run(
                "ctr",
                &["-a", sock, "-n", "k8s.io", "images", "rm", &old],
                &[],
            )
            .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_libraries_outside_the_base_travel() {
        let ldd = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x1)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x2)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x3)\n\t/lib64/ld-linux-x86-64.so.2 (0x4)\n";
        assert_eq!(
            extra_libs(ldd),
            [PathBuf::from("/lib/x86_64-linux-gnu/libssl.so.3")]
        );
        assert!(extra_libs("\tnot a dynamic executable\n").is_empty());
    }

    #[test]
    fn the_containerfile_uses_the_local_base() {
        let f = containerfile("localhost/graphfleet-base:cc-1", "hive_router", &[]);
        assert_eq!(
            f,
            "FROM localhost/graphfleet-base:cc-1\nCOPY hive_router /usr/local/bin/hive_router\nUSER 65532:65532\nWORKDIR /tmp\nENTRYPOINT [\"/usr/local/bin/hive_router\"]\n"
        );
        let f = containerfile("b", "router", &["libssl.so.3".into()]);
        assert!(
            f.contains("ENV LD_LIBRARY_PATH=/usr/local/lib/graphfleet-peer\n"),
            "{f}"
        );
        assert_eq!(
            image_ref(Peer::HiveRouter, "0.3.10", "0123456789abcdef"),
            "localhost/graphfleet-bench-hive-router:0.3.10-0123456789ab"
        );
    }
}
