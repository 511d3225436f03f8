// The CSP benchmarks of bench/csp/main.cpp, in Go's own idioms: goroutines
// and channels, the programs every Go user knows (skynet, the concurrent
// prime sieve, ping-pong), written anew for this suite.
package main

import (
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"time"
)

func skynet(c chan int64, num, size, div int64) {
	if size == 1 {
		c <- num
		return
	}
	rc := make(chan int64)
	var sum int64
	for i := int64(0); i < div; i++ {
		go skynet(rc, num+i*(size/div), size/div, div)
	}
	for i := int64(0); i < div; i++ {
		sum += <-rc
	}
	c <- sum
}

func generate(ch chan<- int) {
	for i := 2; ; i++ {
		ch <- i
	}
}

func filter(in <-chan int, out chan<- int, prime int) {
	for {
		i := <-in
		if i%prime != 0 {
			out <- i
		}
	}
}

// sieve returns the n-th prime. Its goroutines stay blocked when it returns
// (as in the original program): one round per process.
func sieve(n int) int {
	ch := make(chan int)
	go generate(ch)
	prime := 0
	for i := 0; i < n; i++ {
		prime = <-ch
		ch1 := make(chan int)
		go filter(ch, ch1, prime)
		ch = ch1
	}
	return prime
}

func pingPong(n int64) int64 {
	there := make(chan int)
	back := make(chan int)
	go func() {
		for v := range there {
			back <- v
		}
	}()
	var sum int64
	for i := int64(0); i < n; i++ {
		there <- int(i & 0xFFFF)
		sum += int64(<-back)
	}
	close(there)
	return sum
}

func mpmc(n, pairs int64) int64 {
	ch := make(chan int64, 1024)
	var total int64
	var producersLeft = pairs
	done := make(chan bool)
	for k := int64(0); k < pairs; k++ {
		go func(from, to int64) {
			for i := from; i < to; i++ {
				ch <- i
			}
			if atomic.AddInt64(&producersLeft, -1) == 0 {
				close(ch)
			}
		}(n*k/pairs, n*(k+1)/pairs)
		go func() {
			var sum int64
			for v := range ch {
				sum += v
			}
			atomic.AddInt64(&total, sum)
			done <- true
		}()
	}
	for k := int64(0); k < pairs; k++ {
		<-done
	}
	return total
}

func cspSum(out chan int64, lo, hi int64) {
	if lo == hi {
		out <- lo
		return
	}
	mid := lo + (hi-lo)/2
	halves := make(chan int64, 2)
	go cspSum(halves, lo, mid)
	go cspSum(halves, mid+1, hi)
	a := <-halves
	b := <-halves
	out <- a + b
}

func rssKiB() int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var pages, resident int64
	fmt.Sscanf(string(data), "%d %d", &pages, &resident)
	return resident * int64(os.Getpagesize()) / 1024
}

func runCSP(bench string, size, grain int64, rounds int) bool {
	switch bench {
	case "skynet_channels":
		var expected int64
		for i := int64(0); i < size; i++ {
			expected += i
		}
		report("ms", float64(size)*10/9, rounds, func() float64 {
			start := time.Now()
			c := make(chan int64)
			go skynet(c, 0, size, 10)
			got := <-c
			ms := float64(time.Since(start).Nanoseconds()) / 1e6
			if got != expected {
				wrong("skynet", got, expected)
			}
			return ms
		})
	case "prime_sieve":
		expected := 0
		for c, found := 2, int64(0); found < size; c++ {
			prime := true
			for d := 2; d*d <= c; d++ {
				if c%d == 0 {
					prime = false
					break
				}
			}
			if prime {
				found++
				expected = c
			}
		}
		report("ms", float64(size), rounds, func() float64 {
			start := time.Now()
			got := sieve(int(size))
			ms := float64(time.Since(start).Nanoseconds()) / 1e6
			if got != expected {
				wrong("prime_sieve", int64(got), int64(expected))
			}
			return ms
		})
	case "ping_pong":
		var expected int64
		for i := int64(0); i < size; i++ {
			expected += i & 0xFFFF
		}
		report("ns/round trip", float64(size), rounds, func() float64 {
			start := time.Now()
			got := pingPong(size)
			ns := float64(time.Since(start).Nanoseconds()) / float64(size)
			if got != expected {
				wrong("ping_pong", got, expected)
			}
			return ns
		})
	case "channel_mpmc":
		pairs := grain
		if pairs < 1 {
			pairs = 1
		}
		report("ns/message", float64(size), rounds, func() float64 {
			start := time.Now()
			got := mpmc(size, pairs)
			ns := float64(time.Since(start).Nanoseconds()) / float64(size)
			if got != (size-1)*size/2 {
				wrong("channel_mpmc", got, (size-1)*size/2)
			}
			return ns
		})
	case "processes_idle":
		report("ns/process", float64(size), rounds, func() float64 {
			gate := make(chan int)
			var waiting, released int64
			runtime.GC()
			before := rssKiB()
			for i := int64(0); i < size; i++ {
				go func() {
					atomic.AddInt64(&waiting, 1)
					<-gate
					atomic.AddInt64(&released, 1)
				}()
			}
			for atomic.LoadInt64(&waiting) != size {
				runtime.Gosched()
			}
			after := rssKiB()
			start := time.Now()
			close(gate)
			for atomic.LoadInt64(&released) != size {
				runtime.Gosched()
			}
			ns := float64(time.Since(start).Nanoseconds()) / float64(size)
			fmt.Printf("BYTES_PER_PROCESS %.1f\n", float64(after-before)*1024/float64(size))
			return ns
		})
	case "csp_sum":
		expected := size * (size + 1) / 2
		report("s/round", float64(2*size), rounds, func() float64 {
			start := time.Now()
			c := make(chan int64, 1)
			go cspSum(c, 0, size)
			got := <-c
			s := time.Since(start).Seconds()
			if got != expected {
				wrong("csp_sum", got, expected)
			}
			return s
		})
	default:
		return false
	}
	return true
}
