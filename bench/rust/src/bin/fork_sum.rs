use fjord_bench_peers::*;
use std::time::Instant;

fn sum(lo: u64, hi: u64) -> u64 {
    if lo == hi {
        return lo;
    }
    let mid = lo + (hi - lo) / 2;
    let (a, b) = rayon::join(|| sum(lo, mid), || sum(mid + 1, hi));
    a + b
}

fn main() {
    let a = parse_args();
    let n = if a.size > 0 { a.size } else { 10_000_000 };
    let expected = n * (n + 1) / 2;
    match a.imp.as_str() {
        "rayon" => {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build().unwrap();
            run_rounds(&a, "s/round", 2.0 * n as f64, || {
                let s = Instant::now();
                let got = pool.install(|| sum(0, n));
                let secs = elapsed_ms(s) / 1e3;
                check("fork_sum", got, expected);
                secs
            });
        }
        other => {
            eprintln!("unknown --impl {other}");
            std::process::exit(2);
        }
    }
}
