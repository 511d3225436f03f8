//! tokio's spawn_blocking in blocking_offload (bench/io/main.cpp has the
//! shape): a compute loop of --size jobs finding the primes below 1,000,
//! spawned on --threads workers, while 1,000 tasks make 10 spawn_blocking
//! calls each that sleep 1 ms; the figure is the compute loop's makespan,
//! with the process's CPU time per round beside it (cpu_ms) and the blocking
//! calls done by the time the loop ended (calls_during: a call finished after
//! it did not slow the loop down).
//! `tokio-alone` runs the compute loop with no calls (tokio's own
//! baseline: its tasks and this compute function, not fjord's).
use fjord_bench_peers::*;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The seed's compute task, as bench/common/primes.hpp: the primes below
/// 1,000, into a vector.
fn primes_below_1000() -> i64 {
    let mut primes = Vec::new();
    for n in 2..1000 {
        let mut prime = true;
        let mut d = 2;
        while d * d <= n {
            if n % d == 0 {
                prime = false;
                break;
            }
            d += 1;
        }
        if prime {
            primes.push(n);
        }
    }
    primes.len() as i64
}

/// This process's CPU time (user + system) in ms, from /proc/self/stat
/// (clock ticks: 10 ms here).
fn process_cpu_ms() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name (which may hold spaces).
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15; `rest` starts at field 3.
    let ticks: f64 = [11, 12]
        .iter()
        .map(|&i| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0))
        .sum();
    ticks * 10.0
}

fn main() {
    let a = parse_args();
    let offloading = a.imp == "tokio-spawn_blocking";
    if !offloading && a.imp != "tokio-alone" {
        eprintln!("unknown --impl {}", a.imp);
        std::process::exit(2);
    }
    let jobs = if a.size > 0 { a.size } else { 20_000 };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(a.threads)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let round = || {
        let cpu_before = process_cpu_ms();
        let primes = Arc::new(AtomicI64::new(0));
        let calls = Arc::new(AtomicUsize::new(0));
        let (ms, during) = runtime.block_on(async {
            let start = Instant::now();
            let mut offload = Vec::new();
            for _ in 0..(if offloading { 1000 } else { 0 }) {
                let calls = calls.clone();
                offload.push(tokio::spawn(async move {
                    for _ in 0..10 {
                        tokio::task::spawn_blocking(|| std::thread::sleep(Duration::from_millis(1)))
                            .await
                            .unwrap();
                        calls.fetch_add(1, Ordering::Relaxed);
                    }
                }));
            }
            let mut compute = Vec::with_capacity(jobs as usize);
            for _ in 0..jobs {
                let primes = primes.clone();
                compute.push(tokio::spawn(async move {
                    primes.fetch_add(primes_below_1000(), Ordering::Relaxed);
                }));
            }
            for c in compute {
                c.await.unwrap();
            }
            let ms = elapsed_ms(start);
            let during = calls.load(Ordering::Relaxed);
            for o in offload {
                o.await.unwrap();
            }
            (ms, during)
        });
        check("primes", primes.load(Ordering::Relaxed) as u64, 168 * jobs);
        check("blocking calls", calls.load(Ordering::Relaxed) as u64, if offloading { 10_000 } else { 0 });
        (ms, process_cpu_ms() - cpu_before, during as f64)
    };
    round(); // warm-up
    let mut makespan = Vec::new();
    let mut cpu = Vec::new();
    let mut during = Vec::new();
    for _ in 0..a.rounds {
        let (ms, c, d) = round();
        makespan.push(ms);
        cpu.push(c);
        during.push(d);
    }
    let extra = format!(", \"cpu_ms\": {:.1}, \"calls_during\": {:.0}", median(&mut cpu), median(&mut during));
    print_result("ms", makespan, jobs as f64, &extra);
}
