module breaker/bindings/go

go 1.19
