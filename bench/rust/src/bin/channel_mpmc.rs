//! channel_mpmc with crossbeam-channel on threads: --size integers through
//! one bounded channel of capacity 1024, --grain producers and as many
//! consumers, one OS thread each (crossbeam has no processes of its own).
use fjord_bench_peers::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

fn main() {
    let a = parse_args();
    let n = if a.size > 0 { a.size } else { 10_000_000 };
    let pairs = a.grain.max(1);
    if a.imp != "crossbeam" {
        eprintln!("unknown --impl {}", a.imp);
        std::process::exit(2);
    }
    let expected = n * (n - 1) / 2;
    run_rounds(&a, "ns/message", n as f64, || {
        let (tx, rx) = crossbeam_channel::bounded::<u64>(1024);
        let total = AtomicU64::new(0);
        let s = Instant::now();
        std::thread::scope(|scope| {
            for k in 0..pairs {
                let tx = tx.clone();
                scope.spawn(move || {
                    for i in n * k / pairs..n * (k + 1) / pairs {
                        tx.send(i).unwrap();
                    }
                });
                let rx = rx.clone();
                let total = &total;
                scope.spawn(move || {
                    let mut sum = 0u64;
                    for v in rx.iter() {
                        sum += v;
                    }
                    total.fetch_add(sum, Ordering::Relaxed);
                });
            }
            drop(tx); // the channel disconnects when the producers are done
        });
        let ns = elapsed_ms(s) * 1e6 / n as f64;
        check("channel_mpmc", total.load(Ordering::Relaxed), expected);
        ns
    });
}
