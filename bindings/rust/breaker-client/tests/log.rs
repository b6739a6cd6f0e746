//! The library's log lines: with `Options::log` set every line reaches it (here through the
//! `log` facade) and nothing reaches stderr; without it, a client that cannot reach breakerd
//! writes nothing to stderr either. Each case runs in a child process (this test binary again)
//! whose stderr the parent reads.

use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use breaker_client::{Client, LogSink, Options};

const CHILD_ENV: &str = "BREAKER_LOG_CHILD";

/// The records the `log` facade received.
struct Capture(Mutex<Vec<String>>);

impl log::Log for Capture {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        self.0.lock().unwrap().push(format!("{} {} {}", record.level(), record.target(), record.args()));
    }
    fn flush(&self) {}
}

static CAPTURE: Capture = Capture(Mutex::new(Vec::new()));

/// Dials a breakerd that is not there until the library has failed to connect once, then
/// prints the lines the facade captured. Runs only as the child of the test below.
#[test]
fn log_child() {
    let mode = match std::env::var(CHILD_ENV) {
        Ok(mode) => mode,
        Err(_) => return,
    };
    log::set_logger(&CAPTURE).unwrap();
    log::set_max_level(log::LevelFilter::Trace);
    let client = Client::new(&Options {
        addresses: vec!["127.0.0.1:1".into()],
        node_id: format!("rust-log-{mode}"),
        log: if mode == "facade" { Some(LogSink::facade()) } else { None },
        ..Default::default()
    })
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.stats().reconnects == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(client);
    for line in CAPTURE.0.lock().unwrap().iter() {
        println!("captured: {line}");
    }
}

#[test]
fn log_lines_go_to_the_sink_and_nothing_to_stderr() {
    if std::env::var(CHILD_ENV).is_ok() {
        return;
    }
    for mode in ["facade", "default"] {
        let out = Command::new(std::env::current_exe().unwrap())
            .args(["log_child", "--exact", "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, mode)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{mode}: {stdout}\n{stderr}");
        assert!(stderr.is_empty(), "{mode}: the library wrote to stderr:\n{stderr}");
        let captured = stdout.contains("captured: INFO breaker_client breakerd at 127.0.0.1:1:");
        assert_eq!(captured, mode == "facade", "{mode}: lines captured:\n{stdout}");
    }
}
