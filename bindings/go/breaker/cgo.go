package breaker

/*

#cgo CFLAGS: -I${SRCDIR}/../../..
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

// report runs one report call with c.mu held shared, and turns its code into an error.
func (c *Client) report(call func(*C.breaker_client, *C.breaker_error) C.int) error {
	var e C.breaker_error
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
