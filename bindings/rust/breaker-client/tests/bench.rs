//! Timing loops for the two calls a node makes most: reading the policy, and submitting an
//! observation. Ignored by default (stable Rust has no #[bench]); run in release mode:
//!
//!     cargo test --offline --release --test bench -- --ignored --nocapture
//!
//! No breakerd is needed: neither call waits for the network, so a client towards a port
//! nothing listens on measures the same cost.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use breaker_client::{Client, Options};

fn client() -> Client {
    Client::new(&Options {
        addresses: vec!["127.0.0.1:1".into()],
        node_id: "rust-bench".into(),
        max_buffered_observations: Some(1 << 21),
        ..Default::default()
    })
    .unwrap()
}

/// Mainnet's slot now: the client (no network given) refuses a slot outside its window.
fn slot_now() -> u64 {
    (SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() - 1606824023) / 12
}

/// Runs `f` `n` times after a warm-up and prints its cost per call. `f` returns a number
/// that is summed and printed, so that the optimizer cannot drop the call (std::hint's
/// black_box is stable only from Rust 1.66).
fn time(name: &str, n: u64, mut f: impl FnMut(u64) -> u64) {
    let mut sink = 0u64;
    for i in 0..n / 10 {
        sink = sink.wrapping_add(f(i));
    }
    let start = Instant::now();
    for i in 0..n {
        sink = sink.wrapping_add(f(i));
    }
    let ns = start.elapsed().as_nanos() as f64 / n as f64;
    println!("{name}: {ns:.1} ns/op over {n} calls (sink {sink})");
}

#[test]
#[ignore]
fn policy_read_cost() {
    let c = client();
    time("policy()", 5_000_000, |_| c.policy().version + 1);
    time("is_allowed(builder, relay)", 5_000_000, |i| c.is_allowed(i & 1023, "relay.example:18550") as u64);
}

#[test]
#[ignore]
fn policy_read_cost_from_16_threads() {
    let c = client();
    let n = 1_000_000u64;
    let start = Instant::now();
    let sink: u64 = std::thread::scope(|s| {
        let threads: Vec<_> = (0..16)
            .map(|_| s.spawn(|| (0..n).map(|_| c.policy().version + 1).sum::<u64>()))
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).sum()
    });
    let ns = start.elapsed().as_nanos() as f64 / (16 * n) as f64;
    println!("policy() from 16 threads: {ns:.1} ns per call, wall time over all threads (sink {sink})");
}

#[test]
#[ignore]
fn observation_submit_cost() {
    let c = client();
    let slot = slot_now();
    time("observe_bid(slot, builder, relay)", 1_000_000, |i| {
        c.observe_bid(slot, i & 1023, "relay.example:18550", &[]).is_ok() as u64
    });
    // Each block its own root: the library refuses a second builder's report of one block.
    time("observe_payload_delivered(slot, builder, root)", 1_000_000, |i| {
        let mut root = [0u8; 32];
        root[..8].copy_from_slice(&i.to_le_bytes());
        c.observe_payload_delivered(slot, i & 1023, &root).is_ok() as u64
    });
}
