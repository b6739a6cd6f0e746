//! One slot from Gloas on (the bids, the choice, the reveal, the blocks seen, finality), then the
//! checks a node makes before Gloas, against a breakerd that is not there: the library's local
//! policy applies, and nothing waits for the network. `//bindings:rust_test` runs it:
//!
//!     cargo run --offline --example whole_slot

use std::time::{SystemTime, UNIX_EPOCH};

use breaker_client::{Client, Mode, Options, SELF_BUILDER};

struct Bid {
    builder: u64,
    /// "" for a bid over P2P.
    relay: &'static str,
    value: u64,
}

fn main() -> Result<(), breaker_client::Error> {
    let client = Client::new(&Options {
        addresses: vec!["127.0.0.1:1".into()], // Nothing listens: breakerd is down.
        node_id: "example-slot".into(),
        ..Default::default()
    })?;
    // The node's own clock: mainnet's current slot.
    let slot = (SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs() - 1_606_824_023) / 12;

    // The bids of the slot: each reported, then kept only when the policy allows it.
    let bids = [
        Bid { builder: 7, relay: "", value: 90 },
        Bid { builder: 9, relay: "https://relay.example", value: 120 },
    ];
    let mut best = Bid { builder: SELF_BUILDER, relay: "", value: 0 };
    for bid in bids {
        client.observe_bid(slot, bid.builder, bid.relay, &[])?;
        if client.policy().mode != Mode::SelfBuild && client.is_allowed(bid.builder, bid.relay) && bid.value > best.value {
            best = bid;
        }
    }
    println!("chosen builder: {} through {:?}", best.builder, best.relay);

    // The block is proposed; its payload envelope arrives: the builder revealed.
    let block = [0xb1; 32];
    client.observe_payload_delivered(slot, best.builder, &block)?;
    // The slot ends with this block; the finalized checkpoint moved.
    client.observe_blocks_seen(slot, &[block])?;
    client.observe_finalized(slot, slot / 32 - 2)?;

    // Before Gloas a header names no builder: the node asks per relay, and reports a reveal
    // that failed.
    println!("relay allowed: {}", client.is_relay_allowed("https://relay.example"));
    println!("not a relay: {}", !client.is_relay_allowed("ftp://relay.example"));
    client.observe_relay_reveal_missing(slot, "https://relay.example", &[0xb2; 32])?;
    println!("reported: {}", client.stats().reported);
    Ok(())
}
