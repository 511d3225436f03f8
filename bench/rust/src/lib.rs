//! The RESULT protocol shared with the C++ and Go programs (see
//! bench/common/harness.hpp): one warm-up, `rounds` timed rounds, one line.

pub mod uts_rng;

use std::time::Instant;

pub struct Args {
    pub imp: String,
    pub threads: usize,
    pub size: u64,
    pub rounds: usize,
    pub grain: u64,
}

pub fn parse_args() -> Args {
    let argv: Vec<String> = std::env::args().collect();
    let mut a = Args { imp: String::new(), threads: 1, size: 0, rounds: 10, grain: 0 };
    let mut i = 1;
    while i + 1 < argv.len() {
        let v = &argv[i + 1];
        match argv[i].as_str() {
            "--impl" => a.imp = v.clone(),
            "--threads" => a.threads = v.parse().expect("--threads"),
            "--size" => a.size = v.parse().expect("--size"),
            "--rounds" => a.rounds = v.parse().expect("--rounds"),
            "--grain" => a.grain = v.parse().expect("--grain"),
            other => {
                eprintln!("unknown option {other}");
                std::process::exit(2);
            }
        }
        i += 2;
    }
    a
}

pub fn check(what: &str, got: u64, expected: u64) {
    if got != expected {
        eprintln!("WRONG RESULT in {what}: got {got}, expected {expected}");
        std::process::exit(3);
    }
}

pub fn run_rounds(a: &Args, unit: &str, tasks: f64, mut round: impl FnMut() -> f64) {
    round();
    let v: Vec<f64> = (0..a.rounds).map(|_| round()).collect();
    print_result(unit, v, tasks, "");
}

/// The median of `v` (sorted in place).
pub fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|x, y| x.partial_cmp(y).unwrap());
    let n = v.len();
    if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 }
}

/// The RESULT line for the rounds' figures; `extra` is more JSON members,
/// each with a leading comma.
pub fn print_result(unit: &str, mut v: Vec<f64>, tasks: f64, extra: &str) {
    let m = median(&mut v);
    let n = v.len();
    println!(
        "RESULT {{\"value\": {m:.6}, \"unit\": \"{unit}\", \"min\": {:.6}, \"max\": {:.6}, \"tasks\": {tasks:.0}, \"peak_rss_kib\": {}{extra}}}",
        v[0],
        v[n - 1],
        peak_rss_kib()
    );
}

/// VmHWM from /proc/self/status, in KiB (-1 if unreadable).
pub fn peak_rss_kib() -> i64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(-1)
}

pub fn elapsed_ms(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}
