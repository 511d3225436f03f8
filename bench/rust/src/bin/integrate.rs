//! Adaptive trapezoid quadrature (see bench/integrate/main.cpp) with rayon::join.
use fjord_bench_peers::*;
use std::time::Instant;

const EPSILON: f64 = 1.0e-9;

fn f(x: f64) -> f64 {
    (x * x + 1.0) * x
}

/// (area, intervals split)
fn integrate(x1: f64, y1: f64, x2: f64, y2: f64, area: f64, parallel: bool) -> (f64, u64) {
    let half = (x2 - x1) / 2.0;
    let x0 = x1 + half;
    let y0 = f(x0);
    let left = (y1 + y0) / 2.0 * half;
    let right = (y0 + y2) / 2.0 * half;
    if (left + right - area).abs() < EPSILON {
        return (left + right, 0);
    }
    let (l, r) = if parallel {
        rayon::join(|| integrate(x1, y1, x0, y0, left, true), || integrate(x0, y0, x2, y2, right, true))
    } else {
        (integrate(x1, y1, x0, y0, left, false), integrate(x0, y0, x2, y2, right, false))
    };
    (l.0 + r.0, l.1 + r.1 + 1)
}

fn main() {
    let a = parse_args();
    let n = if a.size > 0 { a.size as f64 } else { 1000.0 };
    let exact = n * n * n * n / 4.0 + n * n / 2.0;
    let splits = integrate(0.0, f(0.0), n, f(n), 0.0, false).1;
    match a.imp.as_str() {
        "rayon" => {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build().unwrap();
            run_rounds(&a, "ms", splits as f64, || {
                let s = Instant::now();
                let got = pool.install(|| integrate(0.0, f(0.0), n, f(n), 0.0, true));
                let ms = elapsed_ms(s);
                if !((got.0 - exact).abs() <= 1e-9 * exact) {
                    eprintln!("WRONG RESULT in integrate: got {}, expected {exact}", got.0);
                    std::process::exit(3);
                }
                check("integrate (intervals split)", got.1, splits);
                ms
            });
        }
        other => {
            eprintln!("unknown --impl {other}");
            std::process::exit(2);
        }
    }
}
