//! UTS binomial tree T3 (see bench/uts/main.cpp): rayon::join splits a
//! node's children in halves, the same shape as fjord's join rows.
use fjord_bench_peers::uts_rng::*;
use fjord_bench_peers::*;
use std::time::Instant;

const Q: f64 = 0.124875;
const M: u32 = 8;

struct Node {
    state: Digest,
    height: u32,
}

fn child_count(n: &Node, b0: u32) -> u32 {
    if n.height == 0 {
        b0
    } else if probability(&n.state) < Q {
        M
    } else {
        0
    }
}

fn child(n: &Node, i: u32) -> Node {
    Node { state: child_state(&n.state, i), height: n.height + 1 }
}

fn seq(n: &Node, b0: u32) -> u64 {
    (0..child_count(n, b0)).map(|i| seq(&child(n, i), b0)).sum::<u64>() + 1
}

fn children(n: &Node, b0: u32, lo: u32, hi: u32) -> u64 {
    if hi - lo == 1 {
        return node(&child(n, lo), b0);
    }
    let mid = lo + (hi - lo) / 2;
    let (x, y) = rayon::join(|| children(n, b0, lo, mid), || children(n, b0, mid, hi));
    x + y
}

fn node(n: &Node, b0: u32) -> u64 {
    let k = child_count(n, b0);
    1 + if k == 0 { 0 } else { children(n, b0, 0, k) }
}

fn main() {
    let a = parse_args();
    let b0 = if a.size > 0 { a.size as u32 } else { 2000 };
    let root = Node { state: root_state(42), height: 0 };
    let expected = if b0 == 2000 { 4_112_897 } else { seq(&root, b0) };
    match a.imp.as_str() {
        "rayon" => {
            // UTS trees are ~1600 levels deep: more than rayon's default 2 MiB stacks hold.
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(a.threads)
                .stack_size(64 << 20)
                .build()
                .unwrap();
            run_rounds(&a, "ms", (expected - 1) as f64, || {
                let s = Instant::now();
                let got = pool.install(|| node(&root, b0));
                let ms = elapsed_ms(s);
                check("uts", got, expected);
                ms
            });
        }
        other => {
            eprintln!("unknown --impl {other}");
            std::process::exit(2);
        }
    }
}
