//! The crate against a real breakerd process on loopback, and breakerctl.

mod common;

use std::sync::atomic::{AtomicU64, AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use breaker_client::{Client, Code, Mode, Source};
use common::{eventually, rss_kib, Breakerd};

fn connect(d: &Breakerd, node_id: &str) -> Client {
    let client = Client::new(&d.options(node_id)).unwrap();
    client.wait_synced(Duration::from_secs(20)).unwrap();
    assert!(client.is_synced());
    client
}

/// Reports a bid of `builder` and its failed reveal; waits for the fleet's ban.
fn ban_builder(d: &Breakerd, client: &Client, builder: u64, seed: u8) {
    let slot = d.current_slot();
    client.observe_bid(slot, builder, "https://relay.example:18550", &[]).unwrap();
    client.observe_payload_missing(slot, builder, &[seed; 32], 0.93).unwrap();
    eventually(Duration::from_secs(10), "the fleet bans the builder", || {
        client.policy().bans(builder) && !client.is_allowed(builder, "")
    });
}

#[test]
fn ban_then_reset_through_breakerctl() {
    let d = Breakerd::start("ban");
    let client = Arc::new(connect(&d, "rust-node-1"));
    let before = client.policy();
    assert_eq!((before.source, before.mode), (Source::Fleet, Mode::AllBuilders));
    assert!(!before.bans(5));
    assert!(client.is_allowed(5, "relay.example:18550"));

    let notified = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&notified);
    let subscription = client
        .subscribe(move |policy| seen.store(policy.version, Ordering::SeqCst))
        .unwrap();

    ban_builder(&d, &client, 5, 0xab);
    let banned = client.policy();
    assert!(banned.version > before.version, "{} <= {}", banned.version, before.version);
    eventually(Duration::from_secs(5), "the callback sees the ban's version", || {
        notified.load(Ordering::SeqCst) >= banned.version
    });

    d.breakerctl(&["reset", "--reason=bindings test"]);
    eventually(Duration::from_secs(10), "the reset lifts the ban", || {
        let p = client.policy();
        !p.bans(5) && p.version > banned.version && client.is_allowed(5, "")
    });
    drop(subscription);
    let s = client.stats();
    assert_eq!((s.reported, s.acknowledged, s.refused), (2, 2, 0), "{s:?}");
    assert!(s.connected);
    assert_eq!(s.address, d.address());
}

#[test]
fn fail_static_then_reconnect_keeps_acknowledged_observations() {
    let mut d = Breakerd::start("restart");
    let client = connect(&d, "rust-node-2");
    ban_builder(&d, &client, 5, 1);
    eventually(Duration::from_secs(10), "acknowledged", || client.stats().acknowledged == 2);
    let banned = client.policy();

    d.kill();
    eventually(Duration::from_secs(10), "the client sees breakerd gone", || !client.stats().connected);
    let p = client.policy();
    assert_eq!((p.version, p.source), (banned.version, Source::Fleet), "fail-static");
    assert!(p.bans(5) && !client.is_allowed(5, ""));
    let slot = d.current_slot();
    client.observe_bid(slot, 6, "relay.example:18550", &[]).unwrap();
    client.observe_payload_missing(slot, 6, &[2; 32], 0.9).unwrap();

    d.restart();
    client.wait_synced(Duration::from_secs(30)).unwrap();
    let s = client.stats();
    assert_eq!((s.reported, s.acknowledged, s.buffered), (4, 4, 0), "{s:?}");
    assert!(s.reconnects > 0);
    eventually(Duration::from_secs(10), "both builders banned by the restarted breakerd", || {
        let p = client.policy();
        p.source == Source::Fleet && p.bans(5) && p.bans(6)
    });
}

#[test]
fn bad_input_is_an_error_value() {
    let unreachable = |node_id: &str| breaker_client::Options {
        addresses: vec!["127.0.0.1:1".into()],
        node_id: node_id.into(),
        ..Default::default()
    };
    let e = Client::new(&unreachable("")).err().unwrap();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(e.message.contains("node_id"), "{e}");
    let e = Client::new(&unreachable("a\0b")).err().unwrap();
    assert!(e.message.contains("NUL"), "{e}");
    let e = Client::new(&breaker_client::Options { node_id: "n".into(), ..Default::default() }).err().unwrap();
    assert_eq!(e.code, Code::InvalidArgument);
    let mut missing = unreachable("n");
    missing.fallback_config_file = "/nonexistent.textproto".into();
    assert_eq!(Client::new(&missing).err().unwrap().code, Code::NotFound);

    // An unreachable address: the client starts (and keeps trying); wait_synced says why not.
    let client = Client::new(&unreachable("rust-bad-input")).unwrap();
    let e = client.wait_synced(Duration::from_millis(200)).unwrap_err();
    assert_eq!(e.code, Code::DeadlineExceeded);
    assert!(e.message.contains("127.0.0.1:1"), "{e}");
    assert!(!client.is_synced());
    assert!(client.is_relay_allowed("relay.example:18550") && !client.is_relay_allowed("ftp://x"));
    assert_eq!(client.policy().source, Source::Local);

    // What breakerd would refuse is refused at the call, in breakerd's words. The client has
    // no network: mainnet's chain, whose slot now is this.
    let slot = (common::now_unix() - 1606824023) / 12;
    let e = client.observe_blocks_seen(slot - 65, &[]).unwrap_err();
    assert_eq!(e.code, Code::OutOfRange);
    assert!(e.message.contains("older than the amendment window (64 slots"), "{e}");
    assert!(client.stats().last_refusal.contains("older than the amendment window"));
    let e = client.observe_finalized(slot + 3, 1).unwrap_err();
    assert_eq!(e.code, Code::OutOfRange);
    assert!(e.message.contains("max_future_slots = 2"), "{e}");
    let e = client.observe_bid(slot, 1, "ftp://x", &[]).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(e.message.contains("relay identifier \"ftp://x\" has unknown scheme \"ftp\""), "{e}");
    let e = client.observe_bid(slot, 1, &"r".repeat(600), &[]).unwrap_err();
    assert_eq!(e.code, Code::InvalidArgument);
    assert!(e.message.contains("is 600 bytes; accepted: at most 512 bytes"), "{e}");
    assert!(client.observe_bid(slot, 1, "", &[0; 3]).unwrap_err().message.contains("bid_seen.builder_pubkey is 3 bytes"));
    assert!(client.observe_payload_missing(slot, 1, &[0; 32], f64::NAN).unwrap_err().message.contains("attested_fraction"));
    assert!(client.observe_relay_reveal_missing(slot, "", &[0; 32]).unwrap_err().message.contains("relay identifier \"\" is empty"));
    assert!(client.observe_blocks_seen(slot, &[[0; 32]; 65]).unwrap_err().message.contains("blocks_seen.block_roots"));
    assert!(client.observe_bid(1, 1, "a\0b", &[]).unwrap_err().message.contains("NUL"));
    assert!(!client.is_allowed(1, "a\0b"));
    assert_eq!(client.stats().reported, 0, "a refused observation was queued");
    // A closed client cannot be called: Drop takes it by value, the compiler refuses the rest.
    drop(client);
}

/// 16 threads read the policy while 4 stream observations; the client then moves to another
/// thread, which reads and drops it.
#[test]
fn sixteen_readers_while_observations_stream_then_moved() {
    let d = Breakerd::start("threads");
    let client = Arc::new(connect(&d, "rust-node-3"));
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let slot = d.current_slot();
    const PER_WRITER: u64 = 2000;
    std::thread::scope(|scope| {
        for i in 0..16u64 {
            let (client, stop, reads) = (&client, &stop, &reads);
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let p = client.policy();
                    assert_eq!(p.source, Source::Fleet);
                    client.is_allowed(i, "relay.example:18550");
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        for w in 0..4u64 {
            let client = &client;
            scope.spawn(move || {
                for _ in 0..PER_WRITER {
                    client.observe_bid(slot, 100 + w, "relay.example:18550", &[]).unwrap();
                }
            });
        }
        eventually(Duration::from_secs(60), "every bid acknowledged", || client.stats().acknowledged == 4 * PER_WRITER);
        stop.store(true, Ordering::Relaxed);
    });
    assert!(reads.load(Ordering::Relaxed) >= 16);
    println!("{} policy reads while {} observations streamed", reads.load(Ordering::Relaxed), 4 * PER_WRITER);

    let client = Arc::try_unwrap(client).ok().unwrap();
    let moved = std::thread::spawn(move || {
        assert_eq!(client.policy().source, Source::Fleet);
        client.observe_finalized(slot, 99).unwrap();
        client // and back
    })
    .join()
    .unwrap();
    eventually(Duration::from_secs(10), "acknowledged after the move", || moved.stats().acknowledged == 4 * PER_WRITER + 1);
}

/// 1,000 clients made and dropped against a real breakerd: the resident memory stays flat.
#[test]
fn thousand_new_drop_cycles_keep_memory_flat() {
    let d = Breakerd::start("cycles");
    const CYCLES: usize = 1000;
    const WARM_UP: usize = 100;
    let mut before = 0;
    for i in 0..CYCLES {
        let client = Arc::new(Client::new(&d.options("rust-cycle")).unwrap());
        let subscription = client.subscribe(|_| {}).unwrap();
        client.observe_bid(d.current_slot(), 9, "relay.example:18550", &[]).unwrap();
        let _ = client.policy();
        drop(subscription);
        drop(client);
        if i + 1 == WARM_UP {
            before = rss_kib();
        }
    }
    let after = rss_kib();
    println!("RSS after {WARM_UP} cycles: {before} KiB; after {CYCLES}: {after} KiB");
    assert!(after <= before + 8192, "RSS grew from {before} to {after} KiB over {} cycles", CYCLES - WARM_UP);
}
