//! A Rust beacon node's use of the installed libbreaker-client-dev: it dials breakerd, reports
//! a bid, and reads the fleet's policy until it bans the builder the operator banned
//! (argv[2]). Exits 0 when it does within 20 seconds.

use std::process::exit;
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use breaker_client::{Client, Options, Source};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 {
        eprintln!("usage: {} HOST:PORT BANNED_BUILDER", args[0]);
        exit(2);
    }
    let banned: u64 = args[2].parse().unwrap_or_else(|e| {
        eprintln!("BANNED_BUILDER {:?}: {e}", args[2]);
        exit(2)
    });
    let options = Options {
        addresses: vec![args[1].clone()],
        node_id: "installed-rust-node".into(),
        network: "mainnet".into(),
        ..Options::default()
    };
    let client = Client::new(&options).unwrap_or_else(|e| {
        eprintln!("{e}");
        exit(1)
    });
    // A bid of the current mainnet slot: breakerd refuses observations of long-gone slots.
    let now = SystemTime::now().duration_since(UNIX_EPOCH).expect("after 1970").as_secs();
    let slot = (now - 1_606_824_023) / 12;
    if let Err(e) = client.observe_bid(slot, 7, "", &[]) {
        eprintln!("{e}");
        exit(1);
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        let policy = client.policy();
        if policy.source == Source::Fleet && policy.bans(banned) {
            println!("Rust: policy version {} from breakerd: builder {banned} banned", policy.version);
            return;
        }
        sleep(Duration::from_millis(100));
    }
    eprintln!("Rust: no fleet policy banning builder {banned} within 20 s (source {:?})", client.policy().source);
    exit(1);
}
