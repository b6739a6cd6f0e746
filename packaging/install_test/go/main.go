// A Go beacon node's use of the installed libbreaker-client-dev: the package from
// /usr/share/gocode, the library linked as pkg-config says. It dials breakerd, reports a bid,
// and reads the fleet's policy until it bans the builder the operator banned (argv[2]).
// Exits 0 when it does within 20 seconds.
package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"breaker.dev/bindings/go/breaker"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintf(os.Stderr, "usage: %s HOST:PORT BANNED_BUILDER\n", os.Args[0])
		os.Exit(2)
	}
	banned, err := strconv.ParseUint(os.Args[2], 10, 64)
	if err != nil {
		fmt.Fprintf(os.Stderr, "BANNED_BUILDER %q: %v\n", os.Args[2], err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	client, err := breaker.Dial(ctx, breaker.Options{
		Addresses: []string{os.Args[1]},
		NodeID:    "installed-go-node",
		Network:   "mainnet",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer client.Close()
	// A bid of the current mainnet slot: breakerd refuses observations of long-gone slots.
	slot := uint64(time.Now().Unix()-1606824023) / 12
	if err := client.ObserveBid(slot, 7, "", nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for ctx.Err() == nil {
		if p := client.Policy(); p.Source == breaker.Fleet && p.Bans(banned) {
			fmt.Printf("Go: policy version %d from breakerd: builder %d banned\n", p.Version, banned)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(os.Stderr, "Go: no fleet policy banning builder %d within 20 s (source %v)\n",
		banned, client.Policy().Source)
	os.Exit(1)
}
