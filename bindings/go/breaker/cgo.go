package breaker

/*

#cgo CFLAGS: -I${SRCDIR}
#cgo LDFLAGS: -lbreaker_client
#include <stdlib.h>
#include "breaker_cgo.h"
*/
import "C"

import (
	"runtime/cgo"
	"unsafe"
)

// errorFrom turns a code and the breaker_error filled with it into an *Error (nil for 0).
func errorFrom(code C.int, e *C.breaker_error) error {
	if code == C.BREAKER_OK {
		return nil
	}
	return &Error{Code: Code(code), Message: C.GoString(&e.message[0])}
}

// newCError returns a breaker_error sized for the C API (c_api.h's sized structs).
func newCError() C.breaker_error {
	return C.breaker_error{size: C.size_t(unsafe.Sizeof(C.breaker_error{}))}
}

// cLayout is the layout of c_api.h's sized structs as cgo read the header this package is built
// with: the struct's size under its name, a field's offset under "struct.field". The layout
// test compares it with the C compiler's, for a copy of the header that is not the library's.
func cLayout() map[string]uintptr {
	var e C.breaker_error
	var i C.breaker_policy_info
	var s C.breaker_stats
	return map[string]uintptr{
		"breaker_error":                          unsafe.Sizeof(e),
		"breaker_error.size":                     unsafe.Offsetof(e.size),
		"breaker_error.code":                     unsafe.Offsetof(e.code),
		"breaker_error.message":                  unsafe.Offsetof(e.message),
		"breaker_policy_info":                    unsafe.Sizeof(i),
		"breaker_policy_info.size":               unsafe.Offsetof(i.size),
		"breaker_policy_info.fleet_version":      unsafe.Offsetof(i.fleet_version),
		"breaker_policy_info.mode":               unsafe.Offsetof(i.mode),
		"breaker_policy_info.source":             unsafe.Offsetof(i.source),
		"breaker_policy_info.n_banned_builders":  unsafe.Offsetof(i.n_banned_builders),
		"breaker_policy_info.n_trusted_builders": unsafe.Offsetof(i.n_trusted_builders),
		"breaker_policy_info.n_banned_relays":    unsafe.Offsetof(i.n_banned_relays),
		"breaker_policy_info.n_trusted_relays":   unsafe.Offsetof(i.n_trusted_relays),
		"breaker_stats":                          unsafe.Sizeof(s),
		"breaker_stats.size":                     unsafe.Offsetof(s.size),
		"breaker_stats.connected":                unsafe.Offsetof(s.connected),
		"breaker_stats.reconnects":               unsafe.Offsetof(s.reconnects),
		"breaker_stats.reported":                 unsafe.Offsetof(s.reported),
		"breaker_stats.acknowledged":             unsafe.Offsetof(s.acknowledged),
		"breaker_stats.buffered":                 unsafe.Offsetof(s.buffered),
		"breaker_stats.dropped_bids":             unsafe.Offsetof(s.dropped_bids),
		"breaker_stats.dropped_other":            unsafe.Offsetof(s.dropped_other),
		"breaker_stats.dropped_failures":         unsafe.Offsetof(s.dropped_failures),
		"breaker_stats.refused":                  unsafe.Offsetof(s.refused),
		"breaker_stats.fleet_policy_version":     unsafe.Offsetof(s.fleet_policy_version),
		"breaker_stats.source":                   unsafe.Offsetof(s.source),
		"breaker_stats.fallback_active":          unsafe.Offsetof(s.fallback_active),
		"breaker_stats.replayed":                 unsafe.Offsetof(s.replayed),
		"breaker_stats.sequence_exhausted":       unsafe.Offsetof(s.sequence_exhausted),
		"breaker_stats.address":                  unsafe.Offsetof(s.address),
		"breaker_stats.last_refusal":             unsafe.Offsetof(s.last_refusal),
	}
}

// cString copies s for C, NULL for ""; the caller frees the result with freeCString.
func cString(s string) *C.char {
	if s == "" {
		return nil
	}
	return C.CString(s)
}

func freeCString(s *C.char) {
	if s != nil {
		C.free(unsafe.Pointer(s))
	}
}

// bytesPtr points C at b's first byte (C copies it before returning), NULL when b is empty.
func bytesPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}

//export goPolicyChanged
func goPolicyChanged(handle C.uintptr_t) {
	// Runs on the library's dispatcher thread: it only wakes the watchers, takes no lock a
	// Client's calls hold, and returns at once (breaker_unsubscribe in Close waits for it).
	cgo.Handle(handle).Value().(*Client).watchers.kick()
}

//export goLog
func goLog(handle C.uintptr_t, level C.int, message *C.char) {
	// Runs on the client's log thread, with no lock of the library held.
	cgo.Handle(handle).Value().(func(LogLevel, string))(LogLevel(level), C.GoString(message))
}

// report runs one report call with c.mu held shared, and turns its code into an error.
func (c *Client) report(call func(*C.breaker_client, *C.breaker_error) C.int) error {
	e := newCError()
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.c == nil {
		return ErrClosed
	}
	return errorFrom(call(c.c, &e), &e)
}

// ObserveBid reports that a bid of builder for slot reached the node through relay ("" for a
// bid over P2P); pubkey is the builder's 48-byte key, or nil when not known. It queues the
// observation and returns at once.
func (c *Client) ObserveBid(slot, builder uint64, relay string, pubkey []byte) error {
	r := cString(relay)
	defer freeCString(r)
	return c.report(func(cl *C.breaker_client, e *C.breaker_error) C.int {
		return C.go_report_bid(cl, C.uint64_t(slot), C.uint64_t(builder), r, bytesPtr(pubkey), C.size_t(len(pubkey)), e)
	})
}

// ObservePayloadMissing reports that block root of slot, whose bid names builder, got no
// payload though attestedFraction (0..1) of the committee's weight attested it: the failed
// reveal that bans a builder.
func (c *Client) ObservePayloadMissing(slot, builder uint64, root Root, attestedFraction float64) error {
	return c.report(func(cl *C.breaker_client, e *C.breaker_error) C.int {
		return C.go_report_payload_missing(cl, C.uint64_t(slot), C.uint64_t(builder), bytesPtr(root[:]), C.double(attestedFraction), e)
	})
}

// ObservePayloadDelivered reports that builder revealed the payload of block root.
func (c *Client) ObservePayloadDelivered(slot, builder uint64, root Root) error {
	return c.report(func(cl *C.breaker_client, e *C.breaker_error) C.int {
		return C.go_report_payload_delivered(cl, C.uint64_t(slot), C.uint64_t(builder), bytesPtr(root[:]), e)
	})
}

// ObserveBlocksSeen reports the blocks the node has for slot (at most 64), canonical or not.
func (c *Client) ObserveBlocksSeen(slot uint64, roots []Root) error {
	var first *C.uint8_t
	if len(roots) > 0 {
		// A []Root is contiguous 32-byte roots, as C reads them, and holds no Go pointers.
		first = (*C.uint8_t)(unsafe.Pointer(&roots[0][0]))
	}
	return c.report(func(cl *C.breaker_client, e *C.breaker_error) C.int {
		return C.go_report_blocks_seen(cl, C.uint64_t(slot), first, C.size_t(len(roots)), e)
	})
}

// ObserveFinalized reports the node's latest finalized epoch, as of slot.
func (c *Client) ObserveFinalized(slot, epoch uint64) error {
	return c.report(func(cl *C.breaker_client, e *C.breaker_error) C.int {
		return C.go_report_finalized(cl, C.uint64_t(slot), C.uint64_t(epoch), e)
	})
}

// ObserveBuilderExited reports that builder exited.
func (c *Client) ObserveBuilderExited(slot, builder uint64) error {
	return c.report(func(cl *C.breaker_client, e *C.breaker_error) C.int {
		return C.go_report_builder_exited(cl, C.uint64_t(slot), C.uint64_t(builder), e)
	})
}

// ObserveRelayRevealMissing reports (before Gloas) that relay signed the header of block root
// and did not reveal its payload: the failed reveal that bans a relay.
func (c *Client) ObserveRelayRevealMissing(slot uint64, relay string, root Root) error {
	r := C.CString(relay)
	defer C.free(unsafe.Pointer(r))
	return c.report(func(cl *C.breaker_client, e *C.breaker_error) C.int {
		return C.go_report_relay_reveal_missing(cl, C.uint64_t(slot), r, bytesPtr(root[:]), e)
	})
}
