package breaker

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"syscall"
	"testing"
	"time"
)

// The chain of the tests' breakerd: the current slot is the second of epoch 100, so that a
// builder's one-epoch ban starts well before the epoch ends and outlasts the test; Gloas from
// epoch 0, so that a failed reveal bans its builder.
const (
	testNetwork    = "bindings-devnet"
	secondsPerSlot = 12
	slotsPerEpoch  = 32
)

// breakerd is a breakerd process of a test, on loopback, with its own state directory.
type breakerd struct {
	t        *testing.T
	binary   string
	stateDir string
	config   string
	genesis  int64
	port     int
	cmd      *exec.Cmd
	exited   chan struct{}
}

// binaryPath returns the program named by the environment variable env, or the one Bazel
// builds at rel under the repository's bazel-bin, failing t when neither exists.
func binaryPath(t *testing.T, env, rel string) string {
	t.Helper()
	path := os.Getenv(env)
	if path == "" {
		path = filepath.Join("..", "..", "..", "bazel-bin", rel)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("%s not found (%v): set %s, or run `bazel build //:breakerd //:breakerctl` first", path, err, env)
	}
	return path
}

// startBreakerd starts breakerd on a free loopback port and waits until it serves.
func startBreakerd(t *testing.T) *breakerd {
	t.Helper()
	dir := t.TempDir()
	d := &breakerd{
		t:        t,
		binary:   binaryPath(t, "BREAKERD", "service/breakerd"),
		stateDir: filepath.Join(dir, "state"),
		config:   filepath.Join(dir, "breakerd.textproto"),
	}
	startSlot := int64(100*slotsPerEpoch + 1)
	d.genesis = time.Now().Unix() - startSlot*secondsPerSlot - secondsPerSlot/2
	config := fmt.Sprintf("chain {\n  network: %q\n  genesis_time_unix: %d\n  seconds_per_slot: %d\n  slots_per_epoch: %d\n  gloas_fork_epoch: 0\n}\n",
		testNetwork, d.genesis, secondsPerSlot, slotsPerEpoch)
	if err := os.WriteFile(d.config, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(d.stateDir, 0o700); err != nil {
		t.Fatal(err)
	}
	d.start("127.0.0.1:0")
	t.Cleanup(d.stop)
	return d
}

var listeningLine = regexp.MustCompile(`breakerd listening on .* \(port (\d+)\)`)

// start runs breakerd on listen and waits (at most 30 s) for the line that names its port.
func (d *breakerd) start(listen string) {
	d.t.Helper()
	d.cmd = exec.Command(d.binary, "--listen="+listen, "--state_dir="+d.stateDir, "--config="+d.config)
	stderr, err := d.cmd.StderrPipe()
	if err != nil {
		d.t.Fatal(err)
	}
	if err := d.cmd.Start(); err != nil {
		d.t.Fatalf("starting %s: %v", d.binary, err)
	}
	ports := make(chan int, 1)
	d.exited = make(chan struct{})
	go func() {
		// Reads the log to its end, so that breakerd never blocks on a full pipe.
		scanner := bufio.NewScanner(stderr)
		for scanner.Scan() {
			if m := listeningLine.FindStringSubmatch(scanner.Text()); m != nil {
				var port int
				fmt.Sscan(m[1], &port)
				select {
				case ports <- port:
				default:
				}
			}
		}
		d.cmd.Wait()
		close(d.exited)
	}()
	select {
	case d.port = <-ports:
	case <-d.exited:
		d.t.Fatalf("breakerd exited before listening (--listen=%s)", listen)
	case <-time.After(30 * time.Second):
		d.t.Fatalf("breakerd did not say it listens within 30 s")
	}
}

// options are a node's options towards d; the local engine reads d's chain from its file.
func (d *breakerd) options(nodeID string) Options {
	return Options{Addresses: []string{d.address()}, NodeID: nodeID, Network: testNetwork, FallbackConfigFile: d.config}
}

func (d *breakerd) address() string { return fmt.Sprintf("127.0.0.1:%d", d.port) }

// kill ends breakerd at once, as a crash would.
func (d *breakerd) kill() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	<-d.exited
}

// restart starts breakerd again on the same port, over the same state.
func (d *breakerd) restart() { d.start(d.address()) }

func (d *breakerd) stop() {
	select {
	case <-d.exited:
		return
	default:
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.exited:
	case <-time.After(5 * time.Second):
		d.kill()
	}
}

// currentSlot is the chain's slot now.
func (d *breakerd) currentSlot() uint64 {
	return uint64((time.Now().Unix() - d.genesis) / secondsPerSlot)
}

// breakerctl runs breakerctl against d with args, failing the test when it fails.
func (d *breakerd) breakerctl(args ...string) string {
	d.t.Helper()
	binary := binaryPath(d.t, "BREAKERCTL", "ctl/breakerctl")
	out, err := exec.Command(binary, append([]string{"--target=" + d.address()}, args...)...).CombinedOutput()
	if err != nil {
		d.t.Fatalf("breakerctl %v: %v\n%s", args, err, out)
	}
	return string(out)
}
