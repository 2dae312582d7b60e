//! `docker/`: no container engine runs here, so the images are checked for shape: each
//! Dockerfile is multi-stage with a small non-root runtime, builds a package and binary
//! that exist in the workspace at the pinned toolchain versions, copies only sources that
//! exist, and every image the chart and manifests name has a Dockerfile and the chart's
//! appVersion as tag. The runtime base and the stage the binary comes from are build args
//! (`RUNTIME_BASE`, `BINARIES`) so `scripts/images.sh` can build the same Dockerfiles from
//! prebuilt binaries onto a local base; their defaults are what `docker build` uses. That
//! script, the one image builder, is checked here too (dry runs, single functions).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use graphfleet_deploy_tests::{
    app_version, chart_dir, manifests_dir, pinned_version, read, run, run_ok, template,
    workspace_root,
};
use serde_json::Value;

const REGISTRY: &str = "ghcr.io/graphfleet/";

fn docker_dir() -> PathBuf {
    workspace_root().join("docker")
}

/// `<image name>` → Dockerfile text, for every `docker/<name>.Dockerfile`.
fn dockerfiles() -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    for entry in std::fs::read_dir(docker_dir()).expect("read docker/") {
        let path = entry.expect("entry").path();
        let file = path
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        if let Some(name) = file.strip_suffix(".Dockerfile") {
            found.insert(name.to_owned(), read(&path));
        }
    }
    found
}

/// Instructions with line continuations joined, comments dropped.
fn instructions(dockerfile: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in dockerfile.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('#') || (trimmed.is_empty() && current.is_empty()) {
            continue;
        }
        match trimmed.strip_suffix('\\') {
            Some(head) => {
                current.push_str(head);
                current.push(' ');
            }
            None => {
                current.push_str(trimmed);
                out.push(std::mem::take(&mut current));
            }
        }
    }
    out
}

/// Instructions of the final stage.
fn final_stage(dockerfile: &str) -> Vec<String> {
    let all = instructions(dockerfile);
    let start = all
        .iter()
        .rposition(|i| i.starts_with("FROM "))
        .expect("a FROM");
    all[start..].to_vec()
}

/// The defaults of the global `ARG`s (those before the first `FROM`).
fn global_args(dockerfile: &str) -> BTreeMap<String, String> {
    instructions(dockerfile)
        .iter()
        .take_while(|i| !i.starts_with("FROM "))
        .filter_map(|i| i.strip_prefix("ARG "))
        .filter_map(|a| a.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
}

/// `FROM` lines with the global `ARG` defaults substituted: what `docker build` without
/// build args sees.
fn from_default(dockerfile: &str, from: &str) -> String {
    let mut out = from.to_owned();
    for (name, value) in global_args(dockerfile) {
        out = out.replace(&format!("${{{name}}}"), &value);
    }
    out
}

/// Instructions of the stage named `name` (`FROM ... AS name`), without its `FROM`.
fn stage(dockerfile: &str, name: &str) -> Vec<String> {
    let all = instructions(dockerfile);
    let start = all
        .iter()
        .position(|i| i.starts_with("FROM ") && i.ends_with(&format!(" AS {name}")))
        .unwrap_or_else(|| panic!("no stage {name}"));
    all[start + 1..]
        .iter()
        .take_while(|i| !i.starts_with("FROM "))
        .cloned()
        .collect()
}

/// The runtime binary comes from the `binaries` stage, which is the `builder` stage by
/// default and the `prebuilt` stage (the binary from the build context, no toolchain
/// image) with `--build-arg BINARIES=prebuilt`; the runtime base is a build arg.
fn assert_binary_stages(name: &str, text: &str, binary: &str) {
    let all = instructions(text);
    let binaries = all
        .iter()
        .find(|i| i.starts_with("FROM ") && i.ends_with(" AS binaries"))
        .unwrap_or_else(|| panic!("{name}: a `binaries` stage expected"));
    assert_eq!(binaries, "FROM ${BINARIES} AS binaries", "{name}");
    assert_eq!(
        from_default(text, binaries),
        "FROM builder AS binaries",
        "{name}: docker build compiles by default"
    );
    assert!(
        all.contains(&"FROM scratch AS prebuilt".to_owned()),
        "{name}: a `prebuilt` stage FROM scratch expected"
    );
    assert_eq!(
        stage(text, "prebuilt"),
        [format!("COPY {binary} /out/{binary}")],
        "{name}: the prebuilt stage only copies the binary from the build context"
    );
    let last = final_stage(text);
    assert_eq!(last[0], "FROM ${RUNTIME_BASE}", "{name}");
    assert!(
        last.contains(&format!(
            "COPY --from=binaries /out/{binary} /usr/local/bin/{binary}"
        )),
        "{name}: the runtime stage copies /out/{binary} from the binaries stage"
    );
}

/// Workspace packages → their binary targets, from `cargo metadata`.
fn workspace_binaries() -> BTreeMap<String, BTreeSet<String>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let ran = run(
        Command::new(cargo)
            .args([
                "metadata",
                "--no-deps",
                "--format-version",
                "1",
                "--offline",
            ])
            .current_dir(workspace_root()),
        None,
    );
    assert!(ran.success, "cargo metadata failed: {}", ran.stderr);
    let metadata: Value = serde_json::from_str(&ran.stdout).expect("cargo metadata JSON");
    metadata["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let bins = p["targets"]
                .as_array()
                .expect("targets")
                .iter()
                .filter(|t| {
                    t["kind"]
                        .as_array()
                        .is_some_and(|k| k.iter().any(|k| k == "bin"))
                })
                .map(|t| t["name"].as_str().expect("target name").to_owned())
                .collect();
            (p["name"].as_str().expect("package name").to_owned(), bins)
        })
        .collect()
}

#[test]
fn every_image_is_multi_stage_small_and_non_root() {
    let files = dockerfiles();
    assert_eq!(
        files.keys().map(String::as_str).collect::<Vec<_>>(),
        [
            "graphfleet-gateway",
            "graphfleet-gatling",
            "graphfleet-k6",
            "graphfleet-operator",
            "graphfleet-subgraphs"
        ]
    );
    for (name, text) in &files {
        let all = instructions(text);
        let stages = all.iter().filter(|i| i.starts_with("FROM ")).count();
        assert!(stages >= 2, "{name}: multi-stage build expected");
        let last = final_stage(text);
        let base = from_default(text, &last[0]);
        assert!(
            base.starts_with("FROM gcr.io/distroless/") && base.ends_with(":nonroot"),
            "{name}: runtime base {base:?} should be a distroless :nonroot image"
        );
        assert!(
            last.iter().any(|i| i == "USER 65532:65532"),
            "{name}: final stage must run as uid 65532"
        );
        // Gatling's entrypoint is the JVM of its base image (distroless java17).
        let entry = if name == "graphfleet-gatling" {
            "ENTRYPOINT [\"/usr/bin/java\""
        } else {
            "ENTRYPOINT [\"/usr/local/bin/"
        };
        assert!(
            last.iter().any(|i| i.starts_with(entry)),
            "{name}: exec-form ENTRYPOINT expected"
        );
        assert!(
            !last.iter().any(|i| i.starts_with("RUN ")),
            "{name}: distroless has no shell; the final stage cannot RUN"
        );
        let ignore = docker_dir().join(format!("{name}.Dockerfile.dockerignore"));
        let ignore = read(&ignore);
        assert!(
            ignore.lines().any(|l| l == "target/" || l == "*"),
            "{name}: the build context must leave target/ out"
        );
    }
}

#[test]
fn rust_images_build_existing_workspace_binaries_with_the_pinned_toolchain() {
    let binaries = workspace_binaries();
    let rust_version = read(&workspace_root().join("Cargo.toml"))
        .lines()
        .find_map(|l| l.trim().strip_prefix("rust-version = "))
        .expect("workspace rust-version")
        .trim_matches('"')
        .to_owned();
    let expected = [
        (
            "graphfleet-gateway",
            "graphfleet-gateway",
            "graphfleet-gateway",
        ),
        (
            "graphfleet-operator",
            "graphfleet-operator",
            "graphfleet-operator",
        ),
        (
            "graphfleet-subgraphs",
            "graphfleet-bench-subgraphs",
            "graphfleet-subgraphs",
        ),
    ];
    let files = dockerfiles();
    for (image, package, binary) in expected {
        let text = &files[image];
        let all = instructions(text);
        assert!(
            all.contains(&format!("ARG RUST_VERSION={rust_version}")),
            "{image}: builder must use the workspace rust-version {rust_version}"
        );
        assert!(
            all.iter()
                .any(|i| i == "FROM rust:${RUST_VERSION}-bookworm AS builder")
        );
        let build = format!("cargo build --release --locked -p {package} --bin {binary}");
        assert!(
            all.iter().any(|i| i.contains(&build)),
            "{image}: expected `{build}`"
        );
        assert!(
            binaries.get(package).is_some_and(|b| b.contains(binary)),
            "{image}: package {package} has no binary {binary}: {binaries:?}"
        );
        assert!(
            stage(text, "builder")
                .iter()
                .any(|i| i.contains(&format!("/out/{binary}"))),
            "{image}: the builder stage must leave the binary at /out/{binary}"
        );
        assert_binary_stages(image, text, binary);
        let last = final_stage(text);
        assert!(last.contains(&format!("ENTRYPOINT [\"/usr/local/bin/{binary}\"]")));
    }
}

#[test]
fn k6_image_builds_the_pinned_k6_with_the_scripts() {
    let text = &dockerfiles()["graphfleet-k6"];
    let all = instructions(text);
    let k6 = pinned_version("K6_VERSION");
    assert!(
        all.contains(&format!("ARG K6_VERSION=v{k6}")),
        "k6 must be v{k6} (tools/versions.env)"
    );
    assert!(
        all.iter()
            .any(|i| i.contains("go install") && i.contains("go.k6.io/k6@${K6_VERSION}"))
    );
    assert!(
        all.iter().any(|i| i.starts_with("FROM golang:")),
        "golang builder"
    );
    assert_binary_stages("graphfleet-k6", text, "k6");
    // Every COPY source outside a build stage exists in the repository and is not ignored.
    let ignore = read(&docker_dir().join("graphfleet-k6.Dockerfile.dockerignore"));
    let copies: Vec<String> = final_stage(text)
        .iter()
        .filter(|i| i.starts_with("COPY ") && !i.contains("--from="))
        .map(|i| i.split_whitespace().nth(1).expect("COPY source").to_owned())
        .collect();
    assert!(copies.contains(&"bench/k6/".to_owned()), "{copies:?}");
    for source in &copies {
        assert!(
            workspace_root().join(source).is_dir(),
            "COPY source {source} does not exist"
        );
        assert!(
            ignore.lines().any(|l| l == format!("!{source}")),
            "{source} is excluded by the .dockerignore"
        );
    }
    assert!(
        workspace_root().join("bench/k6/scenario.js").is_file(),
        "the k6 image ships bench/k6/scenario.js"
    );
}

#[test]
fn gatling_image_builds_the_pinned_simulation_on_a_java_17_runtime() {
    let text = &dockerfiles()["graphfleet-gatling"];
    let all = instructions(text);
    let pom = read(&workspace_root().join("bench/gatling/pom.xml"));
    assert!(
        pom.contains("<gatling.version>3.13.5</gatling.version>"),
        "Gatling is pinned in the pom"
    );
    assert!(
        all.iter()
            .any(|i| i.starts_with("FROM ${MAVEN_IMAGE} AS builder"))
            && all.iter().any(|i| i.starts_with("ARG MAVEN_IMAGE=maven:")),
        "a Maven builder stage"
    );
    assert!(
        all.contains(&"ARG RUNTIME_BASE=gcr.io/distroless/java17-debian12:nonroot".to_owned()),
        "Java 17 runtime"
    );
    let last = final_stage(text);
    // The operator's Jobs name the main class (resources::loadtest::GATLING_MAIN).
    assert!(
        last.contains(&"CMD [\"dev.graphfleet.gatling.Main\"]".to_owned()),
        "{last:?}"
    );
    assert!(
        last.iter()
            .any(|i| i.contains("-cp\", \"/graphfleet/gatling/lib/*\"")),
        "{last:?}"
    );
    assert!(
        workspace_root()
            .join("bench/gatling/src/main/java/dev/graphfleet/gatling/Main.java")
            .is_file()
    );
    let ignore = read(&docker_dir().join("graphfleet-gatling.Dockerfile.dockerignore"));
    for source in ["bench/gatling/", "bench/sets/"] {
        assert!(
            ignore.lines().any(|l| l == format!("!{source}")),
            "{source}"
        );
    }
}

/// Every `ghcr.io/graphfleet/...` image the chart, the manifests and the operator's
/// default refer to.
fn referenced_images() -> BTreeSet<String> {
    let mut texts = vec![template("img", "img", "")];
    for file in graphfleet_deploy_tests::yaml_files(&manifests_dir()) {
        texts.push(read(&file));
    }
    texts.push(read(&chart_dir().join("values.yaml")));
    texts.push(read(&workspace_root().join("api/src/gateway.rs")));
    let mut images = BTreeSet::new();
    for text in texts {
        for (i, _) in text.match_indices(REGISTRY) {
            let image: String = text[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || "/:.-_".contains(*c))
                .collect();
            images.insert(image);
        }
    }
    images
}

#[test]
fn every_referenced_image_has_a_dockerfile_and_the_app_version_tag() {
    let files = dockerfiles();
    let version = app_version();
    let images = referenced_images();
    let mut seen = BTreeSet::new();
    for image in &images {
        let rest = image.strip_prefix(REGISTRY).expect("registry prefix");
        // values.yaml names repositories without a tag (the tag defaults to appVersion).
        let (name, tag) = rest.split_once(':').unwrap_or((rest, version.as_str()));
        assert!(
            files.contains_key(name),
            "{image} has no docker/{name}.Dockerfile"
        );
        assert_eq!(
            tag, version,
            "{image} should be tagged with appVersion {version}"
        );
        seen.insert(name.to_owned());
    }
    for name in [
        "graphfleet-gateway",
        "graphfleet-operator",
        "graphfleet-subgraphs",
    ] {
        assert!(
            seen.contains(name),
            "{name} is referenced nowhere: {images:?}"
        );
    }
}

fn images_sh() -> PathBuf {
    workspace_root().join("scripts/images.sh")
}

/// `scripts/images.sh` is the one image builder: it builds every Dockerfile with podman (from
/// prebuilt binaries onto the local base) and with docker BuildKit (the Dockerfiles' own
/// stages), tagged as the chart expects, and kind-load loads each; `--dry-run` shows the
/// plan without an engine. Wrong arguments are refused before anything runs.
#[test]
fn the_image_script_builds_every_dockerfile_with_both_engines() {
    let script = images_sh();
    let syntax = run(Command::new("bash").arg("-n").arg(&script), None);
    assert!(syntax.success, "bash -n: {}", syntax.stderr);
    let dry = |args: &[&str]| run_ok(Command::new(&script).args(args), None);
    let docker = dry(&["build", "--engine", "docker", "--dry-run"]);
    let podman = dry(&["build", "--dry-run"]);
    let kind = dry(&["kind-load", "--dry-run", "--cluster", "dev"]);
    let version = app_version();
    let files: BTreeSet<String> = dockerfiles().into_keys().collect();
    for file in &files {
        let image = format!("{REGISTRY}{file}:{version}");
        let name = file
            .strip_prefix("graphfleet-")
            .expect("graphfleet- prefix");
        let build =
            format!("env DOCKER_BUILDKIT=1 docker build -f docker/{file}.Dockerfile -t {image} .");
        assert!(docker.lines().any(|l| l == build), "{build}\n{docker}");
        let staged = format!("{name}: {image} from docker/{file}.Dockerfile (BINARIES=prebuilt");
        assert!(podman.lines().any(|l| l.starts_with(&staged)), "{podman}");
        let load = format!("kind load docker-image {image} --name dev");
        assert!(kind.lines().any(|l| l == load), "{kind}");
    }
    assert_eq!(docker.lines().count(), files.len(), "{docker}");
    assert_eq!(kind.lines().count(), files.len(), "{kind}");
    let peer = dry(&[
        "build",
        "--dry-run",
        "peer-hive-router",
        "--binary-dir",
        "/x/bin",
        "--version",
        "0.3.10",
    ]);
    assert_eq!(
        peer,
        "peer-hive-router: localhost/graphfleet-bench-hive-router:0.3.10-<key> from /x/bin/hive_router onto the cc base\n"
    );

    let refused: &[(&[&str], &str)] = &[
        (&["nonsense"], "scripts/images.sh build [name...]"),
        (
            &["build", "--dry-run", "nonsense"],
            "unknown image 'nonsense'",
        ),
        (&["build", "--bogus"], "unknown option '--bogus'"),
        (
            &["build", "--engine", "rkt"],
            "--engine is podman or docker",
        ),
        (
            &["build", "--engine", "docker", "--dry-run", "pause"],
            "image 'pause' has no Dockerfile",
        ),
        (
            &["kind-load", "--dry-run", "coredns"],
            "image 'coredns' has no Dockerfile",
        ),
        (
            &["build", "--dry-run", "peer-apollo-router"],
            "need --binary-dir DIR and --version V",
        ),
        (
            &["build", "--dry-run", "gateway", "--version", "1"],
            "are for peer images",
        ),
        (
            &[
                "build",
                "--dry-run",
                "peer-hive-router",
                "--binary-dir",
                "/x",
                "--version",
                "a b",
            ],
            "cannot be part of an image tag",
        ),
    ];
    for (args, message) in refused {
        let ran = run(Command::new(&script).args(*args), None);
        assert!(!ran.success, "{args:?} succeeded: {}", ran.stdout);
        assert!(ran.stderr.contains(message), "{args:?}: {}", ran.stderr);
    }
}

/// Calls one function of scripts/images.sh, sourced (which defines and runs nothing).
fn images_fn(call: &str, stdin: Option<&str>) -> String {
    run_ok(
        Command::new("bash")
            .arg("-c")
            .arg(format!(". \"$0\"; {call}"))
            .arg(images_sh()),
        stdin,
    )
}

/// A peer's binary goes onto the cc base with the shared libraries the base lacks, as the
/// base's nonroot user.
#[test]
fn peer_images_carry_only_the_libraries_the_base_lacks() {
    let ldd = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibssl.so.3 => /lib/x86_64-linux-gnu/libssl.so.3 (0x1)\n\tlibgcc_s.so.1 => /lib/x86_64-linux-gnu/libgcc_s.so.1 (0x2)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x3)\n\tlibgone.so.1 => not found\n\t/lib64/ld-linux-x86-64.so.2 (0x4)\n";
    assert_eq!(
        images_fn("extra_libs", Some(ldd)),
        "/lib/x86_64-linux-gnu/libssl.so.3\n"
    );
    assert_eq!(
        images_fn("extra_libs", Some("\tnot a dynamic executable\n")),
        ""
    );
    assert_eq!(
        images_fn(
            "peer_containerfile localhost/graphfleet-base:cc-1 hive_router",
            None
        ),
        "FROM localhost/graphfleet-base:cc-1\nCOPY hive_router /usr/local/bin/hive_router\nUSER 65532:65532\nWORKDIR /tmp\nENTRYPOINT [\"/usr/local/bin/hive_router\"]\n"
    );
    let f = images_fn("peer_containerfile b router libssl.so.3", None);
    assert!(
        f.contains(
            "COPY lib/ /usr/local/lib/graphfleet-peer/\nENV LD_LIBRARY_PATH=/usr/local/lib/graphfleet-peer\n"
        ),
        "{f}"
    );
}
