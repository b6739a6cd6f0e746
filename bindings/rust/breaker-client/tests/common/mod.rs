//! A breakerd process of a test, on loopback, with its own state directory, and breakerctl
//! against it. The programs come from BREAKERD and BREAKERCTL, or from the repository's Bazel
//! output.

#![allow(dead_code)] // Each test file uses its part.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use breaker_client::Options;

pub const NETWORK: &str = "bindings-devnet";
const SECONDS_PER_SLOT: u64 = 12;
const SLOTS_PER_EPOCH: u64 = 32;

pub struct Breakerd {
    dir: PathBuf,
    config: PathBuf,
    genesis: u64,
    pub port: u16,
    child: Option<Child>,
}

fn program(env: &str, rel: &str) -> PathBuf {
    let path = std::env::var_os(env)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../bazel-bin").join(rel));
    assert!(
        path.exists(),
        "{} not found: set {env}, or run `bazel build //:breakerd //:breakerctl` first",
        path.display()
    );
    path
}

pub fn now_unix() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A fresh directory under the test's temporary directory.
fn temp_dir(name: &str) -> PathBuf {
    let base = std::env::var_os("TEST_TMPDIR").map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
    let dir = base.join(format!("breaker-rust-{name}-{}-{}", std::process::id(), now_unix()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("state")).unwrap();
    dir
}

/// The port of breakerd's "breakerd listening on HOST:PORT (port N)" line.
fn listening_port(line: &str) -> Option<u16> {
    if !line.contains("breakerd listening on") {
        return None;
    }
    let rest = line.split("(port ").nth(1)?;
    rest.split(')').next()?.parse().ok()
}

impl Breakerd {
    /// Starts breakerd on a free loopback port. Its chain's current slot is the second of
    /// epoch 100 (a one-epoch ban outlasts the test); Gloas from epoch 0.
    pub fn start(name: &str) -> Breakerd {
        let dir = temp_dir(name);
        let genesis = now_unix() - (100 * SLOTS_PER_EPOCH + 1) * SECONDS_PER_SLOT - SECONDS_PER_SLOT / 2;
        let config = dir.join("breakerd.textproto");
        std::fs::write(
            &config,
            format!(
                "chain {{\n  network: \"{NETWORK}\"\n  genesis_time_unix: {genesis}\n  seconds_per_slot: {SECONDS_PER_SLOT}\n  slots_per_epoch: {SLOTS_PER_EPOCH}\n  gloas_fork_epoch: 0\n}}\n"
            ),
        )
        .unwrap();
        let mut d = Breakerd { dir, config, genesis, port: 0, child: None };
        d.run("127.0.0.1:0");
        d
    }

    /// Runs breakerd on `listen` and waits (at most 30 s) for the line naming its port.
    fn run(&mut self, listen: &str) {
        let mut child = Command::new(program("BREAKERD", "service/breakerd"))
            .arg(format!("--listen={listen}"))
            .arg(format!("--state_dir={}", self.dir.join("state").display()))
            .arg(format!("--config={}", self.config.display()))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("breakerd starts");
        let stderr = child.stderr.take().unwrap();
        // Held before waiting, so that Drop ends breakerd whatever happens next.
        self.child = Some(child);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            // Reads the log to its end, so that breakerd never blocks on a full pipe.
            for line in BufReader::new(stderr).lines().flatten() {
                if let Some(port) = listening_port(&line) {
                    let _ = tx.send(port);
                }
            }
        });
        self.port = rx.recv_timeout(Duration::from_secs(30)).expect("breakerd says it listens within 30 s");
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn options(&self, node_id: &str) -> Options {
        Options {
            addresses: vec![self.address()],
            node_id: node_id.into(),
            network: NETWORK.into(),
            // The local engine reads this chain from the same file.
            fallback_config_file: self.config.display().to_string(),
            ..Options::default()
        }
    }

    pub fn current_slot(&self) -> u64 {
        (now_unix() - self.genesis) / SECONDS_PER_SLOT
    }

    /// Ends breakerd at once, as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts breakerd again on the same port, over the same state.
    pub fn restart(&mut self) {
        let listen = self.address();
        self.run(&listen);
    }

    /// Runs breakerctl against breakerd; panics with its output when it fails.
    pub fn breakerctl(&self, args: &[&str]) -> String {
        let out = Command::new(program("BREAKERCTL", "ctl/breakerctl"))
            .arg(format!("--target={}", self.address()))
            .args(args)
            .output()
            .expect("breakerctl runs");
        let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "breakerctl {args:?}: {text}");
        text
    }
}

impl Drop for Breakerd {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Polls `cond` until it holds, panicking after `timeout`: for a real breakerd's answers.
pub fn eventually(timeout: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        assert!(Instant::now() < deadline, "not within {timeout:?}: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The resident set size of this process, in KiB.
pub fn rss_kib() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap();
    let pages: u64 = statm.split_whitespace().nth(1).unwrap().parse().unwrap();
    pages * 4096 / 1024
}
