module fjord.dev/bench/peers

go 1.21
