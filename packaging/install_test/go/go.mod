module installed.example/node

go 1.19

require breaker.dev/bindings/go v0.0.0

// The package as libbreaker-client-dev installs it.
replace breaker.dev/bindings/go => /usr/share/gocode/src/breaker.dev/bindings/go
