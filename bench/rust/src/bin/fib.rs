use fjord_bench_peers::*;
use std::time::Instant;

fn fib(n: u64) -> u64 {
    if n < 2 {
        return n;
    }
    let (a, b) = rayon::join(|| fib(n - 1), || fib(n - 2));
    a + b
}

#[inline(never)]
fn fib_seq(n: u64) -> u64 {
    if n < 2 { n } else { fib_seq(n - 1) + fib_seq(n - 2) }
}

fn main() {
    let a = parse_args();
    let n = if a.size > 0 { a.size } else { 30 };
    let expected = fib_seq(n);
    let calls = 2.0 * fib_seq(n + 1) as f64 - 1.0;
    match a.imp.as_str() {
        "rayon" => {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build().unwrap();
            run_rounds(&a, "ms", calls, || {
                let s = Instant::now();
                let got = pool.install(|| fib(n));
                let ms = elapsed_ms(s);
                check("fib", got, expected);
                ms
            });
        }
        "sequential" => run_rounds(&a, "ms", calls, || {
            let s = Instant::now();
            let got = fib_seq(std::hint::black_box(n));
            let ms = elapsed_ms(s);
            check("fib", got, expected);
            ms
        }),
        other => {
            eprintln!("unknown --impl {other}");
            std::process::exit(2);
        }
    }
}
