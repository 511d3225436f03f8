// Go implementations of fjord's fib and fork_sum benchmarks, driven by
// bench/run with the same RESULT protocol as the C++ programs:
//
//	peers fib|fork_sum --impl goroutines --threads N [--size K] [--rounds R]
//
// Both halves of every fork run as goroutines joined by a sync.WaitGroup
// (the libcsp seed's sum_go.go shape, written anew).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"
)

func fib(n int) int {
	if n < 2 {
		return n
	}
	var a int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { a = fib(n - 1); wg.Done() }()
	b := fib(n - 2)
	wg.Wait()
	return a + b
}

func fibValue(n int) int {
	a, b := 0, 1
	for i := 0; i < n; i++ {
		a, b = b, a+b
	}
	return a
}

func sum(lo, hi int64) int64 {
	if lo == hi {
		return lo
	}
	mid := lo + (hi-lo)/2
	var a, b int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { a = sum(lo, mid); wg.Done() }()
	go func() { b = sum(mid+1, hi); wg.Done() }()
	wg.Wait()
	return a + b
}

func report(unit string, tasks float64, rounds int, round func() float64) {
	round()
	v := make([]float64, rounds)
	for i := range v {
		v[i] = round()
	}
	sort.Float64s(v)
	median := v[len(v)/2]
	if len(v)%2 == 0 {
		median = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	fmt.Printf("RESULT {\"value\": %.6g, \"unit\": \"%s\", \"min\": %.6g, \"max\": %.6g, \"tasks\": %.0f, \"peak_rss_kib\": %d}\n",
		median, unit, v[0], v[len(v)-1], tasks, peakRSSKiB())
}

// peakRSSKiB reads VmHWM from /proc/self/status (-1 if unreadable).
func peakRSSKiB() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kib int64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%d", &kib)
			return kib
		}
	}
	return -1
}

func wrong(what string, got, expected int64) {
	fmt.Fprintf(os.Stderr, "WRONG RESULT in %s: got %d, expected %d\n", what, got, expected)
	os.Exit(3)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: peers fib|fork_sum --impl goroutines --threads N")
		os.Exit(2)
	}
	bench := os.Args[1]
	if bench == "net_server" {
		netServer(os.Args[2:])
		return
	}
	fs := flag.NewFlagSet(bench, flag.ExitOnError)
	impl := fs.String("impl", "goroutines", "")
	threads := fs.Int("threads", 1, "")
	size := fs.Int64("size", 0, "")
	rounds := fs.Int("rounds", 10, "")
	grain := fs.Int64("grain", 0, "")
	fs.Parse(os.Args[2:])
	if *impl != "goroutines" && *impl != "sequential" {
		fmt.Fprintf(os.Stderr, "unknown --impl %s\n", *impl)
		os.Exit(2)
	}
	runtime.GOMAXPROCS(*threads)
	switch bench {
	case "fib":
		n := 30
		if *size > 0 {
			n = int(*size)
		}
		expected := fibValue(n)
		report("ms", float64(2*fibValue(n+1)-1), *rounds, func() float64 {
			start := time.Now()
			got := fib(n)
			ms := float64(time.Since(start).Nanoseconds()) / 1e6
			if got != expected {
				wrong("fib", int64(got), int64(expected))
			}
			return ms
		})
	case "fork_sum":
		n := int64(10_000_000)
		if *size > 0 {
			n = *size
		}
		expected := n * (n + 1) / 2
		report("s/round", float64(2*n), *rounds, func() float64 {
			start := time.Now()
			got := sum(0, n)
			s := time.Since(start).Seconds()
			if got != expected {
				wrong("fork_sum", got, expected)
			}
			return s
		})
	default:
		if runCSP(bench, *size, *grain, *rounds) {
			return
		}
		fmt.Fprintf(os.Stderr, "unknown benchmark %s\n", bench)
		os.Exit(2)
	}
}
