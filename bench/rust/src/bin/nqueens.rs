//! BOTS N-queens (see bench/nqueens/main.cpp): a row's safe columns are
//! collected, then split in halves with rayon::join, as fjord's join rows do.
use fjord_bench_peers::*;
use std::time::Instant;

type Board = [i8; 32];

fn safe(b: &Board, row: usize) -> bool {
    let col = b[row] as i32;
    (0..row).all(|i| {
        let d = (row - i) as i32;
        let q = b[i] as i32;
        q != col && q != col - d && q != col + d
    })
}

fn children(n: usize, row: usize, kids: &[Board]) -> u64 {
    if kids.len() == 1 {
        return solve(n, row + 1, &kids[0]);
    }
    let (l, r) = kids.split_at(kids.len() / 2);
    let (x, y) = rayon::join(|| children(n, row, l), || children(n, row, r));
    x + y
}

fn solve(n: usize, row: usize, b: &Board) -> u64 {
    if row == n {
        return 1;
    }
    let mut kids = [[0i8; 32]; 32];
    let mut count = 0;
    for col in 0..n {
        let mut next = *b;
        next[row] = col as i8;
        if safe(&next, row) {
            kids[count] = next;
            count += 1;
        }
    }
    if count == 0 { 0 } else { children(n, row, &kids[..count]) }
}

fn placements(n: usize, row: usize, b: &mut Board) -> u64 {
    if row == n {
        return 0;
    }
    let mut total = 0;
    for col in 0..n {
        b[row] = col as i8;
        if safe(b, row) {
            total += 1 + placements(n, row + 1, b);
        }
    }
    total
}

fn main() {
    let a = parse_args();
    let n = if a.size > 0 { a.size as usize } else { 12 };
    const KNOWN: [u64; 16] = [1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512];
    assert!((1..=16).contains(&n), "--size must be 1..16 queens");
    let expected = KNOWN[n - 1];
    let tasks = placements(n, 0, &mut [0; 32]) as f64;
    match a.imp.as_str() {
        "rayon" => {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(a.threads).build().unwrap();
            run_rounds(&a, "ms", tasks, || {
                let s = Instant::now();
                let got = pool.install(|| solve(n, 0, &[0; 32]));
                let ms = elapsed_ms(s);
                check("nqueens", got, expected);
                ms
            });
        }
        other => {
            eprintln!("unknown --impl {other}");
            std::process::exit(2);
        }
    }
}
