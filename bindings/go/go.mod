module breaker.dev/bindings/go

go 1.19
