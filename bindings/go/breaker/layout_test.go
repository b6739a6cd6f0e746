package breaker

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"testing"
)

// readCLayout reads the lines //client:c_api_layout prints: "<name> <bytes>".
func readCLayout(t *testing.T, path string) map[string]uintptr {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	layout := map[string]uintptr{}
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) != 2 {
			t.Fatalf("%s: malformed line %q", path, scanner.Text())
		}
		n, err := strconv.ParseUint(fields[1], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		layout[fields[0]] = uintptr(n)
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
	return layout
}

// The sized structs as cgo laid them out from the header this package built with, against the
// C compiler's layout from the library's header: every size and offset the same, and no field
// of either missing from the other.
func TestLayoutMatchesC(t *testing.T) {
	path := os.Getenv("BREAKER_C_LAYOUT")
	if path == "" {
		t.Skip("BREAKER_C_LAYOUT is not set: run //bindings:go_test, which prints the C layout")
	}
	want := readCLayout(t, path)
	got := cLayout()
	for name, offset := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: in the C layout, not in the Go package's", name)
		} else if g != offset {
			t.Errorf("%s: Go %d, C %d", name, g, offset)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: in the Go package's layout, not in the C one", name)
		}
	}
}
