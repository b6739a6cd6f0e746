package breaker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// eventually polls cond until it holds or timeout passes: for a real breakerd's answers.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func dial(t *testing.T, d *breakerd, nodeID string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), d.options(nodeID))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	if !c.IsSynced() {
		t.Fatal("IsSynced is false right after WaitSynced returned")
	}
	return c
}

// banBuilder reports a bid of builder and its failed reveal, and waits for the ban.
func banBuilder(t *testing.T, d *breakerd, c *Client, builder uint64, rootSeed byte) {
	t.Helper()
	slot := d.currentSlot()
	if err := c.ObserveBid(slot, builder, "https://relay.example:18550", nil); err != nil {
		t.Fatal(err)
	}
	root := Root{rootSeed, 0xcd}
	if err := c.ObservePayloadMissing(slot, builder, root, 0.93); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the fleet bans the builder", func() bool {
		return c.Policy().Bans(builder) && !c.IsAllowed(builder, "")
	})
}

func TestBanThenResetThroughBreakerctl(t *testing.T) {
	d := startBreakerd(t)
	c := dial(t, d, "go-node-1")
	before := c.Policy()
	if before.Source != Fleet || before.Mode != AllBuilders || before.Bans(5) {
		t.Fatalf("first fleet policy: %+v", before)
	}
	if !c.IsAllowed(5, "relay.example:18550") {
		t.Fatal("builder 5 refused before any failure")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := c.Watch(ctx)
	if first := <-watch; first.Version != before.Version {
		t.Fatalf("Watch's first policy is version %d, want %d", first.Version, before.Version)
	}

	banBuilder(t, d, c, 5, 0xab)
	banned := c.Policy()
	// Each Policy is the caller's own: changing it changes no one else's.
	banned.BannedBuilders[0] = 999
	if again := c.Policy(); !again.Bans(5) || again.Bans(999) {
		t.Fatalf("a caller's change reached another's policy: %+v", again)
	}
	banned = c.Policy()
	if banned.Version <= before.Version {
		t.Fatalf("the ban's version %d is not above %d", banned.Version, before.Version)
	}
	select {
	case p := <-watch:
		if p.Version < banned.Version && !p.Bans(5) {
			// Latest wins: a later policy may have replaced it; wait for the ban.
			eventually(t, 5*time.Second, "Watch delivers the ban", func() bool {
				select {
				case p = <-watch:
				default:
				}
				return p.Bans(5)
			})
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Watch delivered nothing after the ban")
	}

	out := d.breakerctl("reset", "--reason=bindings test")
	if out == "" {
		t.Fatal("breakerctl reset printed nothing")
	}
	eventually(t, 10*time.Second, "the reset lifts the ban", func() bool {
		p := c.Policy()
		return !p.Bans(5) && p.Version > banned.Version && c.IsAllowed(5, "")
	})
	s := c.Stats()
	if s.Reported != 2 || s.Acknowledged != 2 || s.Refused != 0 || !s.Connected || s.Address != d.address() {
		t.Fatalf("stats: %+v", s)
	}
}

func TestFailStaticThenReconnectKeepsAcknowledgedObservations(t *testing.T) {
	d := startBreakerd(t)
	c := dial(t, d, "go-node-2")
	banBuilder(t, d, c, 5, 0x01)
	eventually(t, 10*time.Second, "the ban's observations are acknowledged", func() bool {
		return c.Stats().Acknowledged == 2
	})
	banned := c.Policy()

	d.kill()
	eventually(t, 10*time.Second, "the client sees breakerd gone", func() bool { return !c.Stats().Connected })
	// Fail-static: the last fleet policy stays in force, readable.
	if p := c.Policy(); p.Version != banned.Version || p.Source != Fleet || !p.Bans(5) || c.IsAllowed(5, "") {
		t.Fatalf("with breakerd down: %+v", p)
	}
	// What the node sees meanwhile is kept for breakerd.
	slot := d.currentSlot()
	if err := c.ObserveBid(slot, 6, "relay.example:18550", nil); err != nil {
		t.Fatal(err)
	}
	if err := c.ObservePayloadMissing(slot, 6, Root{0x02}, 0.9); err != nil {
		t.Fatal(err)
	}

	d.restart()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	s := c.Stats()
	if s.Reported != 4 || s.Acknowledged != 4 || s.Buffered != 0 || s.Reconnects == 0 {
		t.Fatalf("after the restart: %+v", s)
	}
	// The restarted breakerd holds both the ban it had journaled and the one sent since.
	eventually(t, 10*time.Second, "both builders banned by the restarted breakerd", func() bool {
		p := c.Policy()
		return p.Source == Fleet && p.Bans(5) && p.Bans(6)
	})
	if out := d.breakerctl("builder", "6"); !strings.Contains(out, "6") {
		t.Fatalf("breakerctl builder 6: %s", out)
	}
}

func TestBadInputIsAnErrorValue(t *testing.T) {
	ctx := context.Background()
	var e *Error
	if _, err := Dial(ctx, Options{Addresses: []string{"127.0.0.1:1"}}); !errors.As(err, &e) || e.Code != InvalidArgument || !strings.Contains(e.Message, "node_id") {
		t.Fatalf("empty node id: %v", err)
	}
	if _, err := Dial(ctx, Options{NodeID: "n"}); !errors.As(err, &e) || e.Code != InvalidArgument {
		t.Fatalf("no address: %v", err)
	}
	if _, err := Dial(ctx, Options{Addresses: []string{"127.0.0.1:1"}, NodeID: "n", FallbackConfigFile: "/nonexistent.textproto"}); !errors.As(err, &e) || e.Code != NotFound {
		t.Fatalf("missing fallback file: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Dial(cancelled, Options{Addresses: []string{"127.0.0.1:1"}, NodeID: "n"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled context: %v", err)
	}

	// An unreachable address: Dial starts (the library keeps trying), WaitSynced says why not.
	c, err := Dial(ctx, Options{Addresses: []string{"127.0.0.1:1"}, NodeID: "go-bad-input"})
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelShort()
	if err := c.WaitSynced(short); !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("WaitSynced towards nothing: %v", err)
	}
	if c.IsSynced() {
		t.Fatal("IsSynced towards nothing")
	}
	if !c.IsRelayAllowed("relay.example:18550") || c.IsRelayAllowed("ftp://x") {
		t.Fatal("IsRelayAllowed under the local policy, which bans nothing")
	}
	if p := c.Policy(); p.Source != Local || p.Version != 0 {
		t.Fatalf("policy without breakerd: %+v", p)
	}

	// What breakerd would refuse is refused at the call, in breakerd's words. The client has
	// no network: mainnet's chain, whose slot now is this.
	slot := uint64((time.Now().Unix() - 1606824023) / 12)
	if err := c.ObserveBlocksSeen(slot-65, nil); !errors.As(err, &e) || e.Code != OutOfRange || !strings.Contains(e.Message, "older than the amendment window (64 slots") {
		t.Fatalf("stale slot: %v", err)
	}
	if s := c.Stats(); !strings.Contains(s.LastRefusal, "older than the amendment window") {
		t.Fatalf("last refusal after a stale slot: %q", s.LastRefusal)
	}
	if err := c.ObserveFinalized(slot+3, 1); !errors.As(err, &e) || e.Code != OutOfRange || !strings.Contains(e.Message, "max_future_slots = 2") {
		t.Fatalf("slot ahead: %v", err)
	}
	if err := c.ObserveBid(slot, 1, "ftp://x", nil); !errors.As(err, &e) || e.Code != InvalidArgument || !strings.Contains(e.Message, `relay identifier "ftp://x" has unknown scheme "ftp"`) {
		t.Fatalf("ftp relay: %v", err)
	}
	if err := c.ObserveBid(slot, 1, strings.Repeat("r", 600), nil); !errors.As(err, &e) || e.Code != InvalidArgument || !strings.Contains(e.Message, "is 600 bytes; accepted: at most 512 bytes") {
		t.Fatalf("oversized relay: %v", err)
	}
	if err := c.ObserveBid(slot, 1, "", make([]byte, 3)); !errors.As(err, &e) || !strings.Contains(e.Message, "bid_seen.builder_pubkey is 3 bytes") {
		t.Fatalf("short key: %v", err)
	}
	if err := c.ObservePayloadMissing(slot, 1, Root{}, 1.5); !errors.As(err, &e) || !strings.Contains(e.Message, "attested_fraction") {
		t.Fatalf("fraction 1.5: %v", err)
	}
	if err := c.ObserveRelayRevealMissing(slot, "", Root{}); !errors.As(err, &e) || !strings.Contains(e.Message, `relay identifier "" is empty`) {
		t.Fatalf("empty relay: %v", err)
	}
	if err := c.ObserveBlocksSeen(slot, make([]Root, 65)); !errors.As(err, &e) || !strings.Contains(e.Message, "blocks_seen.block_roots") {
		t.Fatalf("65 roots: %v", err)
	}
	if c.Stats().Reported != 0 {
		t.Fatal("a refused observation was queued")
	}

	c.Close()
	c.Close()
	if err := c.ObserveFinalized(1, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
	if c.IsAllowed(1, "") {
		t.Fatal("IsAllowed after Close")
	}
	if err := c.WaitSynced(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitSynced after Close: %v", err)
	}
	if p := c.Policy(); p.Source != Local {
		t.Fatalf("Policy after Close: %+v", p)
	}
	if _, open := <-c.Watch(ctx); open {
		t.Fatal("Watch after Close delivered")
	}
}

// 100 goroutines read the policy while four stream observations; run under -race.
func TestConcurrentReadersWhileObservationsStream(t *testing.T) {
	d := startBreakerd(t)
	c := dial(t, d, "go-node-3")
	ctx, cancel := context.WithCancel(context.Background())
	var reads atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for ctx.Err() == nil {
				p := c.Policy()
				if p.Source == 0 || p.Mode == 0 {
					t.Errorf("torn policy: %+v", p)
					return
				}
				c.IsAllowed(uint64(i), "relay.example:18550")
				reads.Add(1)
			}
		}(i)
	}
	slot := d.currentSlot()
	const perWriter = 2000
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < perWriter; i++ {
				if err := c.ObserveBid(slot, uint64(100+w), "relay.example:18550", nil); err != nil {
					t.Error(err)
					return
				}
			}
		}(w)
	}
	eventually(t, 60*time.Second, "every bid acknowledged", func() bool { return c.Stats().Acknowledged == 4*perWriter })
	cancel()
	wg.Wait()
	if reads.Load() < 100 {
		t.Fatalf("only %d reads", reads.Load())
	}
	t.Logf("%d policy reads while %d observations streamed", reads.Load(), 4*perWriter)
}

// rssKiB reads the process's resident set size.
func rssKiB(t *testing.T) int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	var size, resident int64
	if _, err := fmt.Sscan(string(data), &size, &resident); err != nil {
		t.Fatal(err)
	}
	return resident * int64(os.Getpagesize()) / 1024
}

// 1,000 clients dialled and closed against a real breakerd, each watched: no goroutine
// outlives its Close, and the resident memory stays flat (not judged under -race, whose
// records grow by themselves).
func TestDialCloseCycles(t *testing.T) {
	d := startBreakerd(t)
	const cycles, warmUp = 1000, 100
	baseGoroutines := runtime.NumGoroutine()
	var before int64
	for i := 0; i < cycles; i++ {
		c, err := Dial(context.Background(), d.options("go-cycle"))
		if err != nil {
			t.Fatal(err)
		}
		watch := c.Watch(context.Background())
		if err := c.ObserveBid(d.currentSlot(), 9, "relay.example:18550", nil); err != nil {
			t.Fatal(err)
		}
		_ = c.Policy()
		c.Close()
		if _, open := <-watch; open {
			// The first policy may be waiting; after it the channel must close.
			if _, open := <-watch; open {
				t.Fatal("Watch still open after Close")
			}
		}
		if i+1 == warmUp {
			runtime.GC()
			before = rssKiB(t)
		}
	}
	runtime.GC()
	after := rssKiB(t)
	t.Logf("RSS after %d cycles: %d KiB; after %d: %d KiB (growth %d KiB)", warmUp, before, cycles, after, after-before)
	if !raceEnabled && after-before > 8192 {
		t.Fatalf("RSS grew by %d KiB over %d cycles", after-before, cycles-warmUp)
	}
	if n := runtime.NumGoroutine(); n > baseGoroutines {
		t.Fatalf("%d goroutines after the cycles, %d before", n, baseGoroutines)
	}
}

// Dial's context bounds the start: ended before the first connection, it closes the client;
// ended after it, it changes nothing.
func TestDialContextBoundsTheStartOnly(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Dial(ctx, Options{Addresses: []string{"127.0.0.1:1"}, NodeID: "go-dial-ctx"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cancel()
	eventually(t, 5*time.Second, "the client closes with its Dial context", func() bool {
		return errors.Is(c.ObserveFinalized(1, 1), ErrClosed)
	})

	d := startBreakerd(t)
	ctx, cancel = context.WithCancel(context.Background())
	connected, err := Dial(ctx, d.options("go-dial-ctx-connected"))
	if err != nil {
		t.Fatal(err)
	}
	defer connected.Close()
	waitCtx, waitCancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer waitCancel()
	if err := connected.WaitSynced(waitCtx); err != nil {
		t.Fatal(err)
	}
	cancel()
	time.Sleep(5 * connectPoll)
	if err := connected.ObserveBlocksSeen(d.currentSlot(), nil); err != nil {
		t.Fatalf("the Dial context ended after the first connection, and the client stopped: %v", err)
	}
}
