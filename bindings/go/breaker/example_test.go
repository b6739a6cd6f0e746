package breaker_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"breaker.dev/bindings/go/breaker"
)

// signedHeader stands for a builder's signed header, as a proposer gets it from a relay.
type signedHeader struct {
	builder uint64
	relay   string
	root    breaker.Root
}

// proposer stands for a Prysm-like proposer's block production.
type proposer struct {
	breaker   *breaker.Client
	getHeader func(slot uint64) (signedHeader, bool)
	reveal    func(signedHeader) bool
	buildOwn  func(slot uint64)
}

// propose is where the breaker is asked and told: before asking relays for a header, on the
// header received, and after a reveal fails.
func (p *proposer) propose(slot uint64) {
	if p.breaker.Policy().Mode == breaker.SelfBuild {
		p.buildOwn(slot) // The fleet is in fallback: no relay is asked.
		return
	}
	h, ok := p.getHeader(slot)
	if !ok {
		p.buildOwn(slot)
		return
	}
	if err := p.breaker.ObserveBid(slot, h.builder, h.relay, nil); err != nil {
		log.Print(err) // The message names what was wrong, e.g. an oversized relay URL.
	}
	if !p.breaker.IsAllowed(h.builder, h.relay) {
		p.buildOwn(slot) // A banned builder or relay.
		return
	}
	if !p.reveal(h) {
		// The relay signed the header and never revealed the payload: the fleet bans it.
		// (From Gloas on, a builder's missing payload is ObservePayloadMissing.)
		if err := p.breaker.ObserveRelayRevealMissing(slot, h.relay, h.root); err != nil {
			log.Print(err)
		}
	}
}

// Example_proposer wires the breaker into a proposer: one Dial at start, one Close at exit.
func Example_proposer() {
	ctx := context.Background()
	client, err := breaker.Dial(ctx, breaker.Options{
		Addresses: []string{"breakerd.pool.internal:50051"},
		NodeID:    "prysm-eu-1",
		Network:   "mainnet",
	})
	if err != nil {
		log.Fatal(err) // A missing or invalid option, named.
	}
	defer client.Close()

	// Operators' changes reach every node at once; log them.
	go func() {
		for policy := range client.Watch(ctx) {
			log.Printf("breaker policy v%d: %v from %v, builders banned: %v",
				policy.Version, policy.Mode, policy.Source, policy.BannedBuilders)
		}
	}()

	p := &proposer{breaker: client /* and the node's own getHeader, reveal, buildOwn */}
	_ = p
}

// Example_wholeSlot runs one slot from Gloas on (the bids, the choice, the reveal, the blocks
// seen, finality), then the checks a node makes before Gloas, against a breakerd that is not
// there: the library's local policy applies, and nothing waits for the network.
func Example_wholeSlot() {
	client, err := breaker.Dial(context.Background(), breaker.Options{
		Addresses: []string{"127.0.0.1:1"}, // Nothing listens: breakerd is down.
		NodeID:    "example-slot",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	// The node's own clock: mainnet's current slot.
	slot := uint64((time.Now().Unix() - 1606824023) / 12)

	// The bids of the slot: each reported, then kept only when the policy allows it.
	type bid struct {
		builder uint64
		relay   string // "" for a bid over P2P
		value   uint64
	}
	bids := []bid{{builder: 7, value: 90}, {builder: 9, relay: "https://relay.example", value: 120}}
	best := bid{builder: breaker.SelfBuilder}
	for _, b := range bids {
		if err := client.ObserveBid(slot, b.builder, b.relay, nil); err != nil {
			log.Fatal(err)
		}
		if client.Policy().Mode != breaker.SelfBuild && client.IsAllowed(b.builder, b.relay) && b.value > best.value {
			best = b
		}
	}
	fmt.Println("chosen builder:", best.builder)

	// The block is proposed; its payload envelope arrives: the builder revealed.
	block := breaker.Root{0xb1}
	if err := client.ObservePayloadDelivered(slot, best.builder, block); err != nil {
		log.Fatal(err)
	}
	// The slot ends with this block; the finalized checkpoint moved.
	if err := client.ObserveBlocksSeen(slot, []breaker.Root{block}); err != nil {
		log.Fatal(err)
	}
	if err := client.ObserveFinalized(slot, slot/32-2); err != nil {
		log.Fatal(err)
	}

	// Before Gloas a header names no builder: the node asks per relay, and reports a reveal
	// that failed.
	fmt.Println("relay allowed:", client.IsRelayAllowed("https://relay.example"))
	fmt.Println("not a relay:", client.IsRelayAllowed("ftp://relay.example"))
	if err := client.ObserveRelayRevealMissing(slot, "https://relay.example", breaker.Root{0xb2}); err != nil {
		log.Fatal(err)
	}
	fmt.Println("reported:", client.Stats().Reported)
	// Output:
	// chosen builder: 9
	// relay allowed: true
	// not a relay: false
	// reported: 6
}
