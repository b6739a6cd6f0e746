package breaker

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// logChildEnv makes TestLogChild run: the parent test runs this test binary again as a child
// process, so that it can read the child's stderr on its own.
const logChildEnv = "BREAKER_LOG_CHILD"

// TestLogChild dials a breakerd that is not there, with Options.Log set when the parent asks,
// until the library has logged a failed connection attempt; it prints the lines it received.
func TestLogChild(t *testing.T) {
	mode := os.Getenv(logChildEnv)
	if mode == "" {
		t.Skip("run by TestLogLinesGoToTheCallbackAndNothingToStderr")
	}
	var mu sync.Mutex
	var lines []string
	opts := Options{Addresses: []string{"127.0.0.1:1"}, NodeID: "go-log-" + mode}
	if mode == "callback" {
		opts.Log = func(level LogLevel, message string) {
			mu.Lock()
			defer mu.Unlock()
			lines = append(lines, fmt.Sprintf("%v %s", level, message))
		}
	}
	c, err := Dial(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for c.Stats().Reconnects == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	c.Close()
	mu.Lock()
	defer mu.Unlock()
	for _, line := range lines {
		fmt.Printf("captured: %s\n", line)
	}
}

// With Options.Log set, every line of the library reaches it, and nothing reaches stderr;
// without it, a client that cannot reach breakerd writes nothing to stderr either.
func TestLogLinesGoToTheCallbackAndNothingToStderr(t *testing.T) {
	for _, mode := range []string{"callback", "default"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestLogChild$", "-test.v")
		cmd.Env = append(os.Environ(), logChildEnv+"="+mode)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, stdout.String(), stderr.String())
		}
		if stderr.Len() != 0 {
			t.Errorf("%s: the library wrote to stderr:\n%s", mode, stderr.String())
		}
		captured := strings.Contains(stdout.String(), "captured: INFO breakerd at 127.0.0.1:1:")
		if mode == "callback" && !captured {
			t.Errorf("callback: no line about the failed connection reached Options.Log:\n%s", stdout.String())
		}
		if mode == "default" && strings.Contains(stdout.String(), "captured:") {
			t.Errorf("default: lines captured without Options.Log:\n%s", stdout.String())
		}
	}
}
