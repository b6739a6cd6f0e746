//go:build race

package breaker

// The race detector keeps its own records of every goroutine and synchronization, which grow
// the process's memory whatever the package does.
const raceEnabled = true
