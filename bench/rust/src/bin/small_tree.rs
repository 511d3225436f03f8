//! A small fork-join tree entered from outside the pool (see
//! bench/small_tree/main.cpp): pool.install(fib(n)) from the main thread,
//! 2000 times per round; microseconds per tree.
use fjord_bench_peers::*;
use std::time::Instant;

const TREES_PER_ROUND: u32 = 2000;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (x, y) = rayon::join(|| fib(n - 1), || fib(n - 2));
    x + y
}

fn fib_value(n: u64) -> u64 {
    let (mut x, mut y) = (0u64, 1u64);
    for _ in 0..n {
        let z = x + y;
        x = y;
        y = z;
    }
    x
}

fn main() {
    let a = parse_args();
    let n = if a.size > 0 { a.size } else { 15 };
    let expected = fib_value(n);
    let nodes = 2.0 * fib_value(n + 1) as f64 - 1.0;
    match a.imp.as_str() {
        "rayon" => {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build().unwrap();
            run_rounds(&a, "us", nodes, || {
                let s = Instant::now();
                for _ in 0..TREES_PER_ROUND {
                    check("small_tree", pool.install(|| fib(n)), expected);
                }
                elapsed_ms(s) * 1000.0 / TREES_PER_ROUND as f64
            });
        }
        other => {
            eprintln!("unknown --impl {other}");
            std::process::exit(2);
        }
    }
}
