//! Where a Lighthouse-like proposer calls the breaker: one client for the node's life, asked
//! before a header is requested and on the header received, told of every bid and of a
//! reveal that failed. Run against a breakerd:
//!
//!     cargo run --offline --example proposer -- 127.0.0.1:50051
//!
//! It proposes one (pretend) block at the current slot of mainnet and prints the decisions.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use breaker_client::{Client, Mode, Options, Root};

/// A builder's signed header, as a relay returns it.
struct SignedHeader {
    builder: u64,
    relay: String,
    block_root: Root,
}

/// The node's block production, reduced to its decisions.
struct Proposer {
    breaker: Arc<Client>,
}

impl Proposer {
    /// Builds the payload for `slot`: the relay's header when the breaker allows it, the
    /// node's own payload otherwise.
    fn propose(&self, slot: u64, header: Option<SignedHeader>, revealed: bool) -> &'static str {
        // Before asking relays: the fleet may be in fallback.
        if self.breaker.policy().mode == Mode::SelfBuild {
            return "self-build: the fleet is in fallback";
        }
        let header = match header {
            Some(header) => header,
            None => return "self-build: no header",
        };
        if let Err(e) = self.breaker.observe_bid(slot, header.builder, &header.relay, &[]) {
            eprintln!("{e}"); // Names what was wrong, e.g. a relay URL past 512 bytes.
        }
        if !self.breaker.is_allowed(header.builder, &header.relay) {
            return "self-build: builder or relay banned";
        }
        if !revealed {
            // Signed and never revealed: every node of the fleet stops taking this relay.
            if let Err(e) = self.breaker.observe_relay_reveal_missing(slot, &header.relay, &header.block_root) {
                eprintln!("{e}");
            }
            return "missed: the relay withheld the payload (reported)";
        }
        "builder's payload"
    }
}

fn main() {
    let address = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:50051".into());
    let client = match Client::new(&Options {
        addresses: vec![address],
        node_id: "lighthouse-eu-1".into(),
        network: "mainnet".into(),
        ..Default::default()
    }) {
        Ok(client) => Arc::new(client),
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if let Err(e) = client.wait_synced(Duration::from_secs(5)) {
        eprintln!("{e}; the local policy applies meanwhile");
    }
    let _subscription = client
        .subscribe(|policy| println!("policy v{}: {:?} from {:?}", policy.version, policy.mode, policy.source))
        .expect("subscribe");

    const MAINNET_GENESIS: u64 = 1_606_824_023;
    let slot = (SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() - MAINNET_GENESIS) / 12;
    let proposer = Proposer { breaker: Arc::clone(&client) };
    let header = || SignedHeader { builder: 7, relay: "https://relay.example".into(), block_root: [0xab; 32] };
    println!("slot {slot}: {}", proposer.propose(slot, Some(header()), false));
    // Only for the demonstration: let breakerd take the report and answer with its policy.
    if let Err(e) = client.wait_synced(Duration::from_secs(5)) {
        eprintln!("{e}");
    }
    std::thread::sleep(Duration::from_millis(200));
    println!("relays banned: {:?}", client.policy().banned_relays);
    println!("slot {}: {}", slot + 1, proposer.propose(slot + 1, Some(header()), true));
}
