//! The `graphfleet-gateway` binary as a real child process, with its files (config,
//! supergraph, log) in a fresh directory under the target dir.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub struct GatewayProcess {
    child: Child,
    pub dir: PathBuf,
    pub addr: SocketAddr,
}

/// A fresh, empty directory for one test's files.
pub fn test_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("gateway-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the test directory");
    dir
}

impl GatewayProcess {
    /// Start the binary with `args` (add `--listen 127.0.0.1:0` yourself or in the
    /// config) and wait until it prints its listening address; stderr goes to
    /// `dir/gateway.log`.
    pub async fn start(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Self {
        let log_path = dir.join("gateway.log");
        let log = std::fs::File::create(&log_path).expect("create the gateway log");
        let mut command = Command::new(env!("CARGO_BIN_EXE_graphfleet-gateway"));
        command
            .args(args)
            .env_remove("GRAPHFLEET_CONFIG")
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        for (k, v) in env {
            command.env(k, v);
        }
        let mut child = command.spawn().expect("spawn graphfleet-gateway");
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&log_path).unwrap_or_default();
            if let Some(addr) = listening_addr(&text) {
                return Self {
                    child,
                    dir: dir.to_owned(),
                    addr,
                };
            }
            if let Some(status) = child.try_wait().expect("poll the gateway") {
                panic!("graphfleet-gateway exited with {status} before listening:\n{text}");
            }
            assert!(
                Instant::now() < deadline,
                "graphfleet-gateway did not listen within 20 s:\n{text}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Everything the gateway logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("gateway.log")).unwrap_or_default()
    }

    pub fn signal(&self, signal: &str) {
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{signal} failed");
    }

    /// Wait for the process to end; panics after `timeout`.
    pub async fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("poll the gateway") {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "graphfleet-gateway still running after {timeout:?}:\n{}",
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address in the "graphfleet-gateway listening on ADDR" line.
fn listening_addr(log: &str) -> Option<SocketAddr> {
    log.lines()
        .find_map(|l| l.split("listening on ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|a| a.parse().ok())
}
