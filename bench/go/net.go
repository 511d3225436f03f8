package main

// The Go net peer of the network benchmarks, driven by bench_net_load:
//
//	peers echo_server PORT THREADS
//
// One goroutine per connection reading into a 4 KiB buffer and writing
// back what it read, on GOMAXPROCS=THREADS (Go's netpoller underneath).

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
)

func echoConn(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	for {
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func echoServer(args []string) {
	if len(args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: peers echo_server PORT THREADS")
		os.Exit(2)
	}
	threads, err := strconv.Atoi(args[1])
	if err != nil || threads < 1 {
		fmt.Fprintln(os.Stderr, "bad THREADS", args[1])
		os.Exit(2)
	}
	runtime.GOMAXPROCS(threads)
	l, err := net.Listen("tcp4", "127.0.0.1:"+args[0])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			continue
		}
		go echoConn(c)
	}
}
