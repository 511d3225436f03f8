package main

// The Go net peer of the network benchmarks, driven by bench_net_load:
//
//	peers net_server PORT THREADS echo|http
//
// One goroutine per connection on GOMAXPROCS=THREADS (Go's netpoller
// underneath). echo reads into a 4 KiB buffer and writes back what it read;
// http answers every request head (up to its blank line) with the same
// fixed reply as the other servers, keep-alive (net/http is not used: the
// peers are all written the same minimal way).

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

var httpReply = []byte("HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!")

func httpConn(c net.Conn) {
	defer c.Close()
	buf := make([]byte, 4096)
	var replies []byte
	matched := 0 // how much of "\r\n\r\n" the bytes read so far end with
	for {
		n, err := c.Read(buf)
		replies = replies[:0]
		for _, b := range buf[:n] {
			if b == "\r\n\r\n"[matched] {
				matched++
			} else if b == '\r' {
				matched = 1
			} else {
				matched = 0
			}
			if matched == 4 {
				replies = append(replies, httpReply...)
				matched = 0
			}
		}
		if len(replies) > 0 {
			if _, werr := c.Write(replies); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func netServer(args []string) {
	if len(args) != 3 || (args[2] != "echo" && args[2] != "http") {
		fmt.Fprintln(os.Stderr, "usage: peers net_server PORT THREADS echo|http")
		os.Exit(2)
	}
	serveConn := echoConn
	if args[2] == "http" {
		serveConn = httpConn
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
		go serveConn(c)
	}
}
