package breaker_test

import (
	"context"
	"log"

	"breaker/bindings/go/breaker"
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
