//! A data-parallel k-means on a team of worker threads, written against
//! the public API only: each rank owns shards of the points, a step is one
//! allreduce of the per-cluster sums and counts, and the contributors of
//! that allreduce say whose shards the new centroids hold. One worker is
//! dead from step 4: that step's centroids lack its shard (the
//! contributors say so, and every survivor sees the same), so the
//! survivors shrink the team and take its shard over, and the run ends on
//! the centroids of every point, the same bits on every survivor, next to
//! a sequential run's. Then the same clustering without faults is timed
//! against a sequential loop and a rayon one, in this run.
//!
//! `cargo run --release --example kmeans`

use std::time::Instant;

use corrected::prelude::*;
use rayon::prelude::*;

/// Dimensions of a point.
const D: usize = 4;
/// Clusters.
const K: usize = 6;
/// Workers, and shards of the points (one each at the start).
const RANKS: u32 = 8;
const STEPS: usize = 12;
/// The worker dead from its `KILLED_AT`-th collective call on.
const KILLED: Rank = 5;
const KILLED_AT: u32 = 4;

type Point = [f64; D];

/// Point `i` (deterministic: a shard can be read again by whoever takes it
/// over): near the center of cluster `i % K`, within 1 in each coordinate.
fn point(i: usize) -> Point {
    let c = (i % K) as f64;
    std::array::from_fn(|d| {
        let mut z = (i * D + d) as u64 ^ 0x9e37_79b9_7f4a_7c15;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        let noise = (z >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
        c * 10.0 * if d % 2 == 0 { 1.0 } else { -0.5 } + noise
    })
}

/// The points of shard `s` of `shards`.
fn shard(s: u32, shards: u32, points: usize) -> impl Iterator<Item = Point> {
    (s as usize..points).step_by(shards as usize).map(point)
}

fn nearest(p: &Point, centroids: &[Point]) -> usize {
    let dist = |c: &Point| (0..D).map(|d| (p[d] - c[d]).powi(2)).sum::<f64>();
    (0..K)
        .min_by(|&a, &b| dist(&centroids[a]).total_cmp(&dist(&centroids[b])))
        .expect("K > 0")
}

/// Per cluster, the sum of its points' coordinates and their number: `K *
/// (D + 1)` values, which add up across shards.
fn partial(points: impl Iterator<Item = Point>, centroids: &[Point]) -> Vec<f64> {
    let mut acc = vec![0.0; K * (D + 1)];
    for p in points {
        let k = nearest(&p, centroids);
        for d in 0..D {
            acc[k * (D + 1) + d] += p[d];
        }
        acc[k * (D + 1) + D] += 1.0;
    }
    acc
}

fn add(a: &mut [f64], b: &[f64]) {
    a.iter_mut().zip(b).for_each(|(x, y)| *x += y);
}

/// The new centroids from summed partials (an empty cluster keeps its own).
fn centroids_of(sums: &[f64], old: &[Point]) -> Vec<Point> {
    (0..K)
        .map(|k| {
            let n = sums[k * (D + 1) + D];
            if n == 0.0 {
                return old[k];
            }
            std::array::from_fn(|d| sums[k * (D + 1) + d] / n)
        })
        .collect()
}

fn start() -> Vec<Point> {
    (0..K).map(point).collect()
}

/// The team with every setting named, so that it runs alike on every
/// machine (`adapt_to_machine(false)`: the same tree and allreduce on a
/// laptop as on a server).
fn team(faults: FaultSchedule) -> Result<Team, Error> {
    Ok(Team::builder()
        .ranks(RANKS)
        .fault_budget(1)
        .tree(TreeSpec::binomial())
        .correction(Correction::Checked)
        .allreduce(AllreduceAlgorithm::Tree)
        .failure_scheme(FailureScheme::List)
        .adapt_to_machine(false)
        .faults(faults)
        .build()?)
}

/// One worker's k-means over `points` split into `RANKS` shards: `STEPS`
/// allreduces; where one lacks shards, the team shrinks and the survivors
/// share the lost shards out. Returns the centroids and, per step, how
/// many shards they held.
fn worker(comm: &mut Comm<'_>, points: usize) -> Result<(Vec<Point>, Vec<u32>), Error> {
    // `held[r]`: the shards rank r of the current team reads.
    let mut held: Vec<Vec<u32>> = (0..RANKS).map(|r| vec![r]).collect();
    let mut centroids = start();
    let mut shards_in = Vec::new();
    for _ in 0..STEPS {
        let mine = held[comm.rank() as usize].clone();
        let local = mine.iter().fold(vec![0.0; K * (D + 1)], |mut acc, &s| {
            add(&mut acc, &partial(shard(s, RANKS, points), &centroids));
            acc
        });
        let mut sums = vec![0.0; local.len()];
        let who = comm.all_reduce_into_contributors(&local, &mut sums, SystemOperation::sum())?;
        // Every survivor has the same `who` and the same sums: the step
        // is a k-means step over exactly the shards of `who`'s ranks.
        let missing = who.missing().expect("one failure is listed");
        shards_in.push(
            (0..comm.size())
                .filter(|r| !missing.contains(r))
                .map(|r| held[r as usize].len() as u32)
                .sum(),
        );
        centroids = centroids_of(&sums, &centroids);
        if !who.is_everyone() {
            // Go on with the survivors; the left-out ranks' shards go to
            // them in turn (every survivor computes the same assignment).
            let left = comm.shrink()?;
            let mut lost: Vec<u32> = left
                .iter()
                .flat_map(|&r| held[r as usize].clone())
                .collect();
            held = (0..held.len() as Rank)
                .filter(|r| !left.contains(r))
                .map(|r| held[r as usize].clone())
                .collect();
            lost.sort_unstable();
            let survivors = held.len();
            for (i, s) in lost.into_iter().enumerate() {
                held[i % survivors].push(s);
            }
        }
    }
    Ok((centroids, shards_in))
}

/// The sequential k-means over every point.
fn sequential(points: usize) -> Vec<Point> {
    let mut centroids = start();
    for _ in 0..STEPS {
        let sums = partial((0..points).map(point), &centroids);
        centroids = centroids_of(&sums, &centroids);
    }
    centroids
}

/// The same with rayon: the points' partials in parallel chunks.
fn with_rayon(points: usize) -> Vec<Point> {
    let mut centroids = start();
    for _ in 0..STEPS {
        let sums = (0..points)
            .into_par_iter()
            .fold(
                || vec![0.0; K * (D + 1)],
                |mut acc, i| {
                    let p = point(i);
                    let k = nearest(&p, &centroids);
                    for d in 0..D {
                        acc[k * (D + 1) + d] += p[d];
                    }
                    acc[k * (D + 1) + D] += 1.0;
                    acc
                },
            )
            .reduce(
                || vec![0.0; K * (D + 1)],
                |mut a, b| {
                    add(&mut a, &b);
                    a
                },
            );
        centroids = centroids_of(&sums, &centroids);
    }
    centroids
}

fn close(a: &[Point], b: &[Point]) -> bool {
    a.iter()
        .flatten()
        .zip(b.iter().flatten())
        .all(|(x, y)| (x - y).abs() <= 1e-9 * x.abs().max(1.0))
}

fn main() -> Result<(), Error> {
    let points = 240_000;
    let faults = FaultSchedule::none().kill(KILLED, KILLED_AT);
    let report = team(faults)?.run(|comm| worker(comm, points));
    let (centroids, shards_in) = report.agreed().expect("every survivor, the same centroids");
    println!(
        "{} survivors, bitwise the same centroids; shards per step: {shards_in:?}",
        report.survivors().count()
    );
    assert_eq!(report.failed, [KILLED]);
    assert_eq!(
        shards_in[KILLED_AT as usize],
        RANKS - 1,
        "step 4 lacks one shard"
    );
    assert!(shards_in[KILLED_AT as usize + 1..]
        .iter()
        .all(|&n| n == RANKS));
    let reference = sequential(points);
    assert!(close(centroids, &reference), "as the sequential run's");
    println!("the same as the sequential run's within 1e-9");

    // Speed, fault-free, every way in this run.
    let points = 2_000_000;
    let t = Instant::now();
    let seq = sequential(points);
    let seq_time = t.elapsed();
    let t = Instant::now();
    let par = with_rayon(points);
    let rayon_time = t.elapsed();
    let team = team(FaultSchedule::none())?;
    let t = Instant::now();
    let report = team.run(|comm| worker(comm, points));
    let ours_time = t.elapsed();
    let (ours, _) = report.agreed().expect("the same centroids");
    assert!(close(&par, &seq) && close(ours, &seq));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{points} points, {STEPS} steps, {cores} cores: sequential {:.0} ms, rayon {:.0} ms, \
         corrected ({RANKS} ranks) {:.0} ms",
        seq_time.as_secs_f64() * 1e3,
        rayon_time.as_secs_f64() * 1e3,
        ours_time.as_secs_f64() * 1e3,
    );
    Ok(())
}
