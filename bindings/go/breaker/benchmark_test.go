package breaker

import (
	"context"
	"encoding/binary"
	"testing"
	"time"
)

// The benchmarks need no breakerd: reading the policy and queueing an observation never wait
// for the network, so a client towards a port nothing listens on measures the same cost.
func benchClient(b *testing.B) *Client {
	b.Helper()
	c, err := Dial(context.Background(), Options{
		Addresses:               []string{"127.0.0.1:1"},
		NodeID:                  "go-bench",
		MaxBufferedObservations: 1 << 20,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func BenchmarkPolicy(b *testing.B) {
	c := benchClient(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = c.Policy()
	}
}

func BenchmarkPolicyParallel(b *testing.B) {
	c := benchClient(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = c.Policy()
		}
	})
}

// mainnetSlotNow is mainnet's slot now: the client (no network given) refuses a slot outside
// its window.
func mainnetSlotNow() uint64 {
	return uint64((time.Now().Unix() - 1606824023) / 12)
}

func BenchmarkIsAllowed(b *testing.B) {
	c := benchClient(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = c.IsAllowed(uint64(i&1023), "relay.example:18550")
	}
}

// A bid through a relay: the observation a node reports most, with a string to copy.
func BenchmarkObserveBid(b *testing.B) {
	c := benchClient(b)
	slot := mainnetSlotNow()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := c.ObserveBid(slot, uint64(i&1023), "relay.example:18550", nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkObservePayloadDelivered(b *testing.B) {
	c := benchClient(b)
	slot := mainnetSlotNow()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Each block its own root: the library refuses a second builder's report of one block.
		var root Root
		binary.LittleEndian.PutUint64(root[:], uint64(i))
		if err := c.ObservePayloadDelivered(slot, uint64(i&1023), root); err != nil {
			b.Fatal(err)
		}
	}
}
