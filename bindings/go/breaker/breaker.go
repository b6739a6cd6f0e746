// Package breaker links a Go beacon node (or any Go program that proposes blocks) to breakerd,
// the staking pool's shared builder circuit breaker, through the C API of the breaker client
// library (client/c_api.h, libbreaker_client.so).
//
// A node Dials once, reports what it sees with the Observe methods, asks IsAllowed (or reads
// Policy) before it takes a builder's bid, and may Watch the policy change. None of these
// waits for the network: observations are buffered and streamed by the library's own threads,
// and the policy is read from an immutable snapshot. When breakerd is unreachable the last
// fleet policy stays in force (fail-static); the library reconnects by itself.
//
// Each Observe method refuses at the call, queuing nothing, what breakerd would refuse for its
// shape, with breakerd's code and message (an *Error; Stats().LastRefusal keeps it too):
// InvalidArgument for a relay that does not normalize ("ftp://x", more than 512 bytes), a key
// neither nil nor 48 bytes, more than 64 roots, the self-build index where a builder is
// needed, a fraction outside [0, 1], a finalized epoch after the slot's; OutOfRange for a slot
// outside the window as the library's clock sees it: more than 2 slots ahead of the current
// slot, or more than 64 behind (breakerd's max_future_slots and amendment_window_slots, from
// its configuration once connected). breakerd judges the window again by its own clock: with
// the two clocks apart, an observation near an edge may pass here and be refused there
// (Stats().Refused counts those, LastRefusal says why).
//
// Every method of Client is safe for concurrent use. C memory is the package's: nothing
// returned needs freeing, and C never keeps a Go pointer. Building needs the library: the one
// libbreaker-client-dev installs is on the linker's path; any other needs
// CGO_LDFLAGS="-L<dir> -Wl,-rpath,<dir>" where <dir> holds libbreaker_client.so (see
// docs/bindings.md).
package breaker

/*
#include <stdlib.h>
#include "breaker_cgo.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// Code is the canonical gRPC/absl status code of an Error.
type Code int

// The codes the C API returns.
const (
	InvalidArgument    Code = C.BREAKER_INVALID_ARGUMENT
	NotFound           Code = C.BREAKER_NOT_FOUND
	FailedPrecondition Code = C.BREAKER_FAILED_PRECONDITION
	// A slot outside the window as the library's clock sees it.
	OutOfRange Code = C.BREAKER_OUT_OF_RANGE
)

func (c Code) String() string {
	switch c {
	case InvalidArgument:
		return "INVALID_ARGUMENT"
	case NotFound:
		return "NOT_FOUND"
	case FailedPrecondition:
		return "FAILED_PRECONDITION"
	case OutOfRange:
		return "OUT_OF_RANGE"
	}
	return fmt.Sprintf("code %d", int(c))
}

// Error is a refusal of the library: its code and its message, which names what was wrong.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("breaker: %v: %s", e.Code, e.Message) }

// ErrClosed is returned by the calls on a Client after Close.
var ErrClosed = errors.New("breaker: the client is closed; Dial a new one")

// SelfBuilder is the builder index of the proposer's own payload: always allowed.
const SelfBuilder uint64 = math.MaxUint64

// Root is a beacon block root.
type Root [32]byte

// TLS names the PEM files of a TLS connection to breakerd.
type TLS struct {
	// The CA certificates breakerd's certificate must chain to; "" for the system's roots.
	CAFile string
	// This node's certificate and key, for mutual TLS; both "" for none.
	CertFile, KeyFile string
}

// Options say how to reach breakerd and who this node is.
type Options struct {
	// breakerd's addresses, "host:port", every replica's; tried in turn. Required.
	Addresses []string
	// This node's stable id in the fleet: 1..128 printable ASCII characters. Required.
	NodeID string
	// The network the node follows (e.g. "mainnet"); breakerd refuses a node of another one.
	// Empty: not checked.
	Network string
	// Reported to breakerd; empty: the library's ("breaker-client/1").
	ClientVersion string
	// Sent as `authorization: Bearer <token>` when breakerd's access file knows the node by
	// token. Empty: none.
	BearerToken string
	// nil: plaintext (loopback or a private network only).
	TLS *TLS
	// Observations kept until breakerd acknowledges them; 0: the library's default (65536).
	MaxBufferedObservations int
	// How long breakerd may be unreachable before the node also applies its local engine's
	// policy; 0: two epochs of the chain.
	StalenessLimit time.Duration
	// A breakerd configuration file for the local engine until breakerd sends its own;
	// "": the library's defaults for Network.
	FallbackConfigFile string
	// Receives every line the library logs, at every level, and nothing goes to stderr. It is
	// called on a thread of the library's own, one line at a time, in order, with no lock of
	// the library held (it may call the Client, but not Close); a slow one delays only later
	// lines. nil: the library writes its warnings and errors to stderr ("breaker-client:
	// WARNING: ..."), and nothing else. Go 1.19 has no log/slog (Go 1.21 does): StdLog routes
	// to a standard *log.Logger, and a function of the caller's to any other logger.
	Log func(level LogLevel, message string)
}

// LogLevel is the level of a line the library logs.
type LogLevel int

// The levels.
const (
	// What goes as expected: connected, a failed connection attempt (repeated while breakerd
	// is away).
	LogInfo LogLevel = C.BREAKER_LOG_INFO
	// What an operator should know: a stream that ended, an observation breakerd refused, the
	// local engine's policy taking part.
	LogWarning LogLevel = C.BREAKER_LOG_WARNING
	// What needs an operator: breakerd sent what this client cannot use, sequence numbers ran
	// out.
	LogError LogLevel = C.BREAKER_LOG_ERROR
)

func (l LogLevel) String() string {
	switch l {
	case LogInfo:
		return "INFO"
	case LogWarning:
		return "WARNING"
	case LogError:
		return "ERROR"
	}
	return fmt.Sprintf("level %d", int(l))
}

// StdLog returns an Options.Log that prints each line of level min or above to logger, as
// "breaker: <LEVEL>: <line>".
func StdLog(logger *log.Logger, min LogLevel) func(LogLevel, string) {
	return func(level LogLevel, message string) {
		if level >= min {
			logger.Printf("breaker: %v: %s", level, message)
		}
	}
}

// Mode is the fleet's fallback mode.
type Mode int

// The modes, as breaker.v1.Mode numbers them.
const (
	AllBuilders Mode = C.BREAKER_MODE_ALL_BUILDERS
	TrustedOnly Mode = C.BREAKER_MODE_TRUSTED_ONLY
	SelfBuild   Mode = C.BREAKER_MODE_SELF_BUILD
)

func (m Mode) String() string {
	switch m {
	case AllBuilders:
		return "all-builders"
	case TrustedOnly:
		return "trusted-only"
	case SelfBuild:
		return "self-build"
	}
	return fmt.Sprintf("mode %d", int(m))
}

// Source says where the policy in force comes from.
type Source int

// The sources.
const (
	// The fleet's policy, from breakerd.
	Fleet Source = C.BREAKER_SOURCE_FLEET
	// The stricter of the last fleet policy and the local engine's: breakerd unreachable past
	// the staleness limit, or back and not yet caught up with what the node saw.
	FleetAndLocal Source = C.BREAKER_SOURCE_FLEET_AND_LOCAL
	// No fleet policy yet: the local engine's.
	Local Source = C.BREAKER_SOURCE_LOCAL
)

func (s Source) String() string {
	switch s {
	case Fleet:
		return "fleet"
	case FleetAndLocal:
		return "fleet+local"
	case Local:
		return "local"
	}
	return fmt.Sprintf("source %d", int(s))
}

// Policy is one policy in force. Each Policy returned is the caller's own: its slices are
// copies, which the caller may change without changing anyone else's.
type Policy struct {
	// The fleet policy's version; 0 before any arrived. It goes up with every change.
	Version uint64
	Mode    Mode
	// Why the mode is what it is; empty for AllBuilders.
	ModeReason string
	Source     Source
	// Builder indices banned, and trusted by the operator, in increasing order.
	BannedBuilders  []uint64
	TrustedBuilders []uint64
	// Normalized relay identifiers banned, and trusted, in increasing byte order.
	BannedRelays  []string
	TrustedRelays []string
}

// Bans reports whether the policy bans builder b.
func (p Policy) Bans(b uint64) bool {
	for _, banned := range p.BannedBuilders {
		if banned == b {
			return true
		}
	}
	return false
}

// Stats are the client's counters.
type Stats struct {
	// A stream to breakerd is up, at Address (the current or last one).
	Connected  bool
	Address    string
	Reconnects uint64
	// Observations reported, acknowledged by breakerd, waiting, dropped when the buffer was
	// full (bids, other non-failures, failures), refused by breakerd, and acknowledged as
	// replays (sent again after a reconnect).
	Reported, Acknowledged, Buffered           uint64
	DroppedBids, DroppedOther, DroppedFailures uint64
	Refused, Replayed                          uint64
	// breakerd has handled the node's last sequence number: run `breakerctl reset --node=ID`.
	SequenceExhausted  bool
	FleetPolicyVersion uint64
	Source             Source
	// The local engine takes part in the policy in force: alert on it.
	FallbackActive bool
	// Why the last observation refused was refused: at the call (the error the call returned)
	// or by breakerd ("breakerd refused observation N: ..."); "" when none was.
	LastRefusal string
}

// Client is a running client of breakerd. Its methods are safe for concurrent use.
type Client struct {
	// Held shared by every call into C, exclusively by Close (breaker_client_free must not
	// race with any other call) and by a refresh of the cached policy (which frees the held
	// one).
	mu sync.RWMutex
	c  *C.breaker_client
	// The policy last read, and the C snapshot it came from (nil after Close).
	held   *C.breaker_policy
	policy Policy

	handle       cgo.Handle
	subscription C.int
	// The cgo.Handle of Options.Log, freed once the library's threads have ended; 0 when nil.
	logHandle cgo.Handle
	watchers  watchers
	closeOnce sync.Once
}

// Dial starts a client. It does not wait for breakerd: the library connects in the background
// and keeps reconnecting until Close (WaitSynced waits). ctx bounds the start: when it ends
// before the client's first connection to breakerd, the client is closed (its calls return
// ErrClosed); after that connection ctx no longer matters, and only Close ends the client. It
// returns an *Error naming a missing or invalid option or an unreadable file, or ctx's error
// when ctx is done already.
func Dial(ctx context.Context, opts Options) (*Client, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if v := C.breaker_abi_version(); v != C.BREAKER_ABI_VERSION {
		return nil, &Error{Code: FailedPrecondition, Message: fmt.Sprintf("libbreaker_client.so has ABI version %d; this package was built for %d: load the library of the same release", int(v), int(C.BREAKER_ABI_VERSION))}
	}
	o := C.breaker_options_new()
	if o == nil {
		return nil, errors.New("breaker: out of memory allocating options")
	}
	defer C.breaker_options_free(o)
	if err := setOptions(o, opts); err != nil {
		return nil, err
	}
	var logHandle cgo.Handle
	if opts.Log != nil {
		logHandle = cgo.NewHandle(opts.Log)
		C.go_options_set_log(o, C.uintptr_t(logHandle))
	}
	e := newCError()
	var c *C.breaker_client
	if code := C.breaker_client_new(o, &c, &e); code != C.BREAKER_OK {
		if logHandle != 0 {
			logHandle.Delete()
		}
		return nil, errorFrom(code, &e)
	}
	client := &Client{c: c, logHandle: logHandle}
	client.watchers.init()
	client.handle = cgo.NewHandle(client)
	// Subscribed before the first read: a change in between is then delivered.
	if code := C.go_subscribe(c, C.uintptr_t(client.handle), &client.subscription, &e); code != C.BREAKER_OK {
		C.breaker_client_free(c)
		client.handle.Delete()
		if logHandle != 0 {
			logHandle.Delete()
		}
		return nil, errorFrom(code, &e)
	}
	client.held = C.breaker_policy_get(c)
	client.policy = convertPolicy(client.held)
	go client.closeIfNotConnectedBefore(ctx)
	return client, nil
}

// connectPoll is how often a client not connected yet looks whether it is.
const connectPoll = 10 * time.Millisecond

// closeIfNotConnectedBefore closes c when ctx ends before c's first connection to breakerd,
// and returns at that connection, or when c is closed.
func (c *Client) closeIfNotConnectedBefore(ctx context.Context) {
	if ctx.Done() == nil {
		return // A context that never ends.
	}
	ticker := time.NewTicker(connectPoll)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			// The first connection may have come since the last tick: a fleet policy
			// received says it did.
			if s := c.Stats(); !s.Connected && s.FleetPolicyVersion == 0 {
				c.Close()
			}
			return
		case <-c.watchers.done:
			return
		case <-ticker.C:
			if c.Stats().Connected {
				return
			}
		}
	}
}

// setOptions copies opts into o; C copies every string before returning.
func setOptions(o *C.breaker_options, opts Options) error {
	e := newCError()
	set := func(code C.int) error {
		if code != C.BREAKER_OK {
			C.breaker_last_error(&e)
			return errorFrom(code, &e)
		}
		return nil
	}
	withString := func(s string, f func(*C.char) C.int) error {
		cs := C.CString(s)
		defer C.free(unsafe.Pointer(cs))
		return set(f(cs))
	}
	if len(opts.Addresses) == 0 {
		return &Error{Code: InvalidArgument, Message: "Options.Addresses is empty; give breakerd's address, host:port"}
	}
	for _, a := range opts.Addresses {
		if err := withString(a, func(s *C.char) C.int { return C.breaker_options_add_address(o, s) }); err != nil {
			return err
		}
	}
	if err := withString(opts.NodeID, func(s *C.char) C.int { return C.breaker_options_set_node_id(o, s) }); err != nil {
		return err
	}
	if err := withString(opts.Network, func(s *C.char) C.int { return C.breaker_options_set_network(o, s) }); err != nil {
		return err
	}
	if opts.ClientVersion != "" {
		if err := withString(opts.ClientVersion, func(s *C.char) C.int { return C.breaker_options_set_client_version(o, s) }); err != nil {
			return err
		}
	}
	if err := withString(opts.BearerToken, func(s *C.char) C.int { return C.breaker_options_set_bearer_token(o, s) }); err != nil {
		return err
	}
	if opts.TLS != nil {
		ca, cert, key := C.CString(opts.TLS.CAFile), C.CString(opts.TLS.CertFile), C.CString(opts.TLS.KeyFile)
		defer C.free(unsafe.Pointer(ca))
		defer C.free(unsafe.Pointer(cert))
		defer C.free(unsafe.Pointer(key))
		if err := set(C.breaker_options_set_tls(o, ca, cert, key)); err != nil {
			return err
		}
	}
	if opts.MaxBufferedObservations < 0 {
		return &Error{Code: InvalidArgument, Message: fmt.Sprintf("Options.MaxBufferedObservations is %d; give a positive count, or 0 for the default", opts.MaxBufferedObservations)}
	}
	if opts.MaxBufferedObservations > 0 {
		if err := set(C.breaker_options_set_max_buffered_observations(o, C.size_t(opts.MaxBufferedObservations))); err != nil {
			return err
		}
	}
	if opts.StalenessLimit < 0 {
		return &Error{Code: InvalidArgument, Message: fmt.Sprintf("Options.StalenessLimit is %v; give a positive duration, or 0 for the default", opts.StalenessLimit)}
	}
	if opts.StalenessLimit > 0 {
		if err := set(C.breaker_options_set_staleness_limit_seconds(o, C.double(opts.StalenessLimit.Seconds()))); err != nil {
			return err
		}
	}
	return withString(opts.FallbackConfigFile, func(s *C.char) C.int { return C.breaker_options_set_fallback_config_file(o, s) })
}

// Close stops the client's threads and frees it; buffered observations not yet acknowledged
// are lost (a restarted node reports anew). It waits for the calls in flight, ends every
// Watch, and takes milliseconds. Policy still answers the last policy afterwards; every other
// call returns ErrClosed (IsAllowed: false). Closing twice is harmless.
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		c.watchers.close()
		c.mu.Lock()
		defer c.mu.Unlock()
		// The callback takes no lock of c: unsubscribing under c.mu cannot deadlock with it.
		C.breaker_unsubscribe(c.c, c.subscription)
		C.breaker_client_free(c.c)
		c.c = nil
		C.breaker_policy_free(c.held)
		c.held = nil
		c.handle.Delete()
		// The library's log thread has ended with breaker_client_free.
		if c.logHandle != 0 {
			c.logHandle.Delete()
		}
	})
	return nil
}

// Policy returns the policy in force. It reads the library's snapshot without blocking,
// converts it only when it changed since the last call, and returns a copy of its lists (one
// allocation per non-empty list): the caller may change what it got.
func (c *Client) Policy() Policy {
	c.mu.RLock()
	if c.c == nil || c.heldIsCurrent() {
		p := c.policy.clone()
		c.mu.RUnlock()
		return p
	}
	c.mu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.c != nil && !c.heldIsCurrent() {
		C.breaker_policy_free(c.held)
		c.held = C.breaker_policy_get(c.c)
		c.policy = convertPolicy(c.held)
	}
	return c.policy.clone()
}

// clone returns p with lists of its own.
func (p Policy) clone() Policy {
	p.BannedBuilders = cloneSlice(p.BannedBuilders)
	p.TrustedBuilders = cloneSlice(p.TrustedBuilders)
	p.BannedRelays = cloneSlice(p.BannedRelays)
	p.TrustedRelays = cloneSlice(p.TrustedRelays)
	return p
}

func cloneSlice[T any](s []T) []T {
	if s == nil {
		return nil
	}
	return append(make([]T, 0, len(s)), s...)
}

// heldIsCurrent reports whether c.held is the library's policy in force.
// REQUIRES: c.mu held, c.c not nil.
func (c *Client) heldIsCurrent() bool {
	return bool(C.go_policy_is_current(C.uintptr_t(uintptr(unsafe.Pointer(c.c))), C.uintptr_t(uintptr(unsafe.Pointer(c.held)))))
}

// convertPolicy copies a held C policy into Go values.
func convertPolicy(held *C.breaker_policy) Policy {
	info := C.breaker_policy_info{size: C.size_t(unsafe.Sizeof(C.breaker_policy_info{}))}
	C.breaker_policy_read(held, &info)
	p := Policy{
		Version:    uint64(info.fleet_version),
		Mode:       Mode(info.mode),
		ModeReason: C.GoString(C.breaker_policy_mode_reason(held)),
		Source:     Source(info.source),
	}
	p.BannedBuilders = builders(info.n_banned_builders, func(out *C.uint64_t, n C.size_t) {
		C.breaker_policy_banned_builders(held, out, n)
	})
	p.TrustedBuilders = builders(info.n_trusted_builders, func(out *C.uint64_t, n C.size_t) {
		C.breaker_policy_trusted_builders(held, out, n)
	})
	p.BannedRelays = relays(info.n_banned_relays, func(i C.size_t) *C.char { return C.breaker_policy_banned_relay(held, i) })
	p.TrustedRelays = relays(info.n_trusted_relays, func(i C.size_t) *C.char { return C.breaker_policy_trusted_relay(held, i) })
	return p
}

func builders(n C.size_t, read func(*C.uint64_t, C.size_t)) []uint64 {
	if n == 0 {
		return nil
	}
	out := make([]uint64, int(n))
	// A []uint64 holds no Go pointers: C may write into it for the call's duration.
	read((*C.uint64_t)(unsafe.Pointer(&out[0])), n)
	return out
}

func relays(n C.size_t, at func(C.size_t) *C.char) []string {
	if n == 0 {
		return nil
	}
	out := make([]string, 0, int(n))
	for i := C.size_t(0); i < n; i++ {
		out = append(out, C.GoString(at(i)))
	}
	return out
}

// IsAllowed reports whether the node may take a bid of builder received through relay (any
// spelling; "" for a bid over P2P). False for a relay that is no endpoint, and after Close.
func (c *Client) IsAllowed(builder uint64, relay string) bool {
	r := cString(relay)
	defer freeCString(r)
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.c == nil {
		return false
	}
	return bool(C.go_is_allowed(C.uintptr_t(uintptr(unsafe.Pointer(c.c))), C.uint64_t(builder), C.uintptr_t(uintptr(unsafe.Pointer(r)))))
}

// IsRelayAllowed reports whether the node may take a header from relay (any spelling) whatever
// its builder: what a node asks before Gloas, when a header names no builder index. False when
// the relay is banned, the mode is SelfBuild, or the mode is TrustedOnly and the relay is not
// trusted; false for a relay that is no endpoint, and after Close.
func (c *Client) IsRelayAllowed(relay string) bool {
	r := C.CString(relay)
	defer C.free(unsafe.Pointer(r))
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.c != nil && bool(C.breaker_is_relay_allowed(c.c, r))
}

// Stats returns the client's counters (zeros after Close).
func (c *Client) Stats() Stats {
	s := C.breaker_stats{size: C.size_t(unsafe.Sizeof(C.breaker_stats{}))}
	c.mu.RLock()
	if c.c != nil {
		C.breaker_get_stats(c.c, &s)
	}
	c.mu.RUnlock()
	return Stats{
		Connected:          bool(s.connected),
		Address:            C.GoString(&s.address[0]),
		Reconnects:         uint64(s.reconnects),
		Reported:           uint64(s.reported),
		Acknowledged:       uint64(s.acknowledged),
		Buffered:           uint64(s.buffered),
		DroppedBids:        uint64(s.dropped_bids),
		DroppedOther:       uint64(s.dropped_other),
		DroppedFailures:    uint64(s.dropped_failures),
		Refused:            uint64(s.refused),
		Replayed:           uint64(s.replayed),
		SequenceExhausted:  bool(s.sequence_exhausted),
		FleetPolicyVersion: uint64(s.fleet_policy_version),
		Source:             Source(s.source),
		FallbackActive:     bool(s.fallback_active),
		LastRefusal:        C.GoString(&s.last_refusal[0]),
	}
}

// IsSynced reports, without waiting, whether the client is connected, breakerd has
// acknowledged every observation reported so far, and the policy in force is the fleet's (the
// library's one definition, breaker_is_synced). False after Close.
func (c *Client) IsSynced() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.c != nil && bool(C.breaker_is_synced(c.c))
}

// syncPoll is how often WaitSynced looks at the client's counters.
const syncPoll = 10 * time.Millisecond

// WaitSynced waits until the client is connected, breakerd has acknowledged every observation
// reported so far, and the policy in force is the fleet's: at a node's start, before its first
// proposal, or in tests. It returns ctx's error, with the client's state, when ctx ends first.
func (c *Client) WaitSynced(ctx context.Context) error {
	ticker := time.NewTicker(syncPoll)
	defer ticker.Stop()
	for {
		c.mu.RLock()
		closed := c.c == nil
		c.mu.RUnlock()
		if closed {
			return ErrClosed
		}
		if c.IsSynced() {
			return nil
		}
		s := c.Stats()
		select {
		case <-ctx.Done():
			return fmt.Errorf("breaker: not in sync with breakerd (connected %v to %q, %d observations unacknowledged, policy from %v): %w",
				s.Connected, s.Address, s.Buffered, s.Source, ctx.Err())
		case <-ticker.C:
		}
	}
}

// Watch returns a channel that receives the policy in force now, then every new one (a new
// fleet version or a change of source). A reader that falls behind receives the latest only.
// The channel is closed when ctx ends or the client is closed; nothing leaks after either.
func (c *Client) Watch(ctx context.Context) <-chan Policy {
	out := make(chan Policy, 1)
	w := c.watchers.add()
	if w == nil {
		close(out)
		return out
	}
	go func() {
		defer close(out)
		defer c.watchers.remove(w)
		send := func(p Policy) {
			// Latest wins: replace an unread policy rather than block on a slow reader.
			select {
			case <-out:
			default:
			}
			out <- p
		}
		send(c.Policy())
		for {
			select {
			case <-ctx.Done():
				return
			case <-c.watchers.done:
				return
			case <-w:
				send(c.Policy())
			}
		}
	}()
	return out
}

// watchers wakes every Watch goroutine when the library publishes a new policy.
type watchers struct {
	mu   sync.Mutex
	set  map[chan struct{}]struct{}
	done chan struct{}
	// The Watch goroutines running: Close waits for them.
	running sync.WaitGroup
}

func (w *watchers) init() {
	w.set = map[chan struct{}]struct{}{}
	w.done = make(chan struct{})
}

// add returns a new watcher's wake-up channel, nil once closed.
func (w *watchers) add() chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.set == nil {
		return nil
	}
	ch := make(chan struct{}, 1)
	w.set[ch] = struct{}{}
	w.running.Add(1)
	return ch
}

func (w *watchers) remove(ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.set, ch)
	w.running.Done()
}

// kick wakes each watcher without waiting: one pending wake-up covers any number of changes.
func (w *watchers) kick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ch := range w.set {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// close ends every Watch and waits for their goroutines.
func (w *watchers) close() {
	w.mu.Lock()
	w.set = nil
	close(w.done)
	w.mu.Unlock()
	w.running.Wait()
}
