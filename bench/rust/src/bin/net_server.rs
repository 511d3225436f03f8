//! The tokio peer of the network benchmarks, driven by bench_net_load:
//!
//!     net_server PORT THREADS echo|http
//!
//! A multi-thread runtime of THREADS workers, one task per connection. echo
//! reads into a 4 KiB buffer and writes back what it read; http answers
//! every request head (up to its blank line) with the same fixed reply as
//! the other servers, keep-alive.
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const HTTP_REPLY: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Length: 13\r\nContent-Type: text/plain\r\n\r\nHello, world!";

async fn echo(mut socket: TcpStream) {
    let mut buf = vec![0u8; 4096];
    loop {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if socket.write_all(&buf[..n]).await.is_err() {
                    return;
                }
            }
        }
    }
}

async fn http(mut socket: TcpStream) {
    let mut buf = vec![0u8; 4096];
    let mut replies: Vec<u8> = Vec::new();
    // How much of "\r\n\r\n" the bytes read so far end with.
    let mut matched = 0usize;
    loop {
        let n = match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        replies.clear();
        for &c in &buf[..n] {
            matched = if c == b"\r\n\r\n"[matched] {
                matched + 1
            } else if c == b'\r' {
                1
            } else {
                0
            };
            if matched == 4 {
                replies.extend_from_slice(HTTP_REPLY);
                matched = 0;
            }
        }
        if !replies.is_empty() && socket.write_all(&replies).await.is_err() {
            return;
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 || (args[3] != "echo" && args[3] != "http") {
        eprintln!("usage: net_server PORT THREADS echo|http");
        std::process::exit(2);
    }
    let port: u16 = args[1].parse().expect("PORT");
    let threads: usize = args[2].parse().expect("THREADS");
    let is_http = args[3] == "http";
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(threads)
        .enable_io()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        loop {
            let (socket, _) = match listener.accept().await {
                Ok(s) => s,
                Err(_) => continue,
            };
            let _ = socket.set_nodelay(true);
            if is_http {
                tokio::spawn(http(socket));
            } else {
                tokio::spawn(echo(socket));
            }
        }
    });
}
