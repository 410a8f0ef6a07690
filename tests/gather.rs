//! Allgather and reduce-scatter on threads (`src/gather.rs`): the kill
//! matrix of the allreduce they run on (every victim set of up to f ranks,
//! each killed before the call, after each of its first sends, or at its
//! call's end; and sets of f + 1), and every input edge.
//!
//! Within the budget every live rank gets the same result and the same
//! contributors, naming every live rank; each block of the allgather is
//! its rank's bit for bit (f64 blocks of unusual bit patterns) or zeros
//! where its rank is left out, and each block of the reduce-scatter is
//! the sum over exactly the contributors' inputs (reduce paper Section
//! 5.1 carried over). Beyond it, every live rank gets that or
//! `TooManyFailures`, alike.

use std::time::Duration;

use corrected::check::input_of;
use corrected::protocol::reduce::FailureScheme;
use corrected::runtime::{Fault, FaultSchedule, Team};
use corrected::types::Rank;
use corrected::{Collectives, ConfigError, Contributors, Error};

mod common;
use common::{assignments, subsets};

const FAILURE_TIMEOUT: Duration = Duration::from_secs(1);
/// Far above what a survivor needs: a rank that waits it out gets
/// `Error::Timeout`, which no case accepts.
const OP_TIMEOUT: Duration = Duration::from_secs(20);
/// After the n-th send, or at the end of the call.
const END: u32 = 1 << 20;
/// Elements per block.
const BLOCK: usize = 3;
/// Elements per block of 128 KiB: two or more of them, 256 KiB, go in place.
const LARGE: usize = 1 << 14;

/// Rank `r`'s allgather block: f64s of bit patterns no arithmetic keeps
/// (a negative zero's sign, NaN payloads), never all-zero bits.
fn block_of(r: Rank, len: usize) -> Vec<f64> {
    (0..len as u64)
        .map(|i| match i {
            0 => f64::from_bits(0x8000_0000_0000_0000 | u64::from(r) << 8 | 1),
            _ => f64::from_bits(0x7ff8_0000_0000_0000 | input_of(r) >> 16 | i),
        })
        .collect()
}

/// Rank `r`'s reduce-scatter input: element i is `input_of(r) * (i + 1)`,
/// so the sum over a set of ranks S is `(i + 1) * Σ_S input_of`.
fn input_vector(r: Rank, procs: u32, len: usize) -> Vec<u64> {
    (0..procs as u64 * len as u64)
        .map(|i| input_of(r).wrapping_mul(i + 1))
        .collect()
}

fn wrapping_sum(a: &u64, b: &u64) -> u64 {
    a.wrapping_add(*b)
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Allgather,
    ReduceScatter,
}

/// A live rank's outcome: its result's bits and its contributors.
type Got = Result<(Vec<u64>, Contributors), Error>;

fn run(procs: u32, f: u32, op: Op, kills: &[(Rank, u32)], len: usize) {
    let name = format!("P={procs} f={f} {op:?} len={len} kills {kills:?}");
    let faults = kills.iter().fold(FaultSchedule::none(), |s, &(r, n)| {
        s.at(r, 0, Fault::DieAfterSends(n))
    });
    let team = Team::builder()
        .ranks(procs)
        .fault_budget(f)
        .faults(faults)
        .failure_timeout(FAILURE_TIMEOUT)
        .op_timeout(OP_TIMEOUT)
        .build()
        .unwrap();
    let report = team.run(|comm| -> Got {
        let me = comm.rank();
        match op {
            Op::Allgather => {
                let mut all = vec![0.0f64; procs as usize * len];
                let who = comm.all_gather_into(&block_of(me, len)[..], &mut all[..])?;
                Ok((all.iter().map(|x| x.to_bits()).collect(), who))
            }
            Op::ReduceScatter => {
                let mut mine = vec![0u64; len];
                let send = input_vector(me, procs, len);
                let who = comm.reduce_scatter_block_into(&send[..], &mut mine[..], wrapping_sum)?;
                Ok((mine, who))
            }
        }
    });
    let victims: Vec<Rank> = kills.iter().map(|&(r, _)| r).collect();
    assert!(
        report.failed.iter().all(|r| victims.contains(r)),
        "{name}: live ranks declared failed: {:?}",
        report.failed
    );
    let within = victims.len() as u32 <= f;
    let mut agreed: Option<Result<Contributors, ()>> = None;
    let mut gathered: Option<Vec<u64>> = None;
    for (r, got) in report.returned().filter(|(r, _)| !victims.contains(r)) {
        match got {
            Ok((bits, who)) => {
                let ranks = who.ranks().expect("a few failures are listed");
                let missing = who.missing().expect("listed");
                assert!(
                    missing.iter().all(|m| victims.contains(m)),
                    "{name}: rank {r}: live ranks left out: {missing:?}"
                );
                let before = kills.iter().filter(|&&(_, n)| n == 0).map(|&(v, _)| v);
                for v in before {
                    assert!(!ranks.contains(&v), "{name}: rank {v} sent nothing");
                }
                match op {
                    Op::Allgather => {
                        for b in 0..procs {
                            let want: Vec<u64> = if ranks.contains(&b) {
                                block_of(b, len).iter().map(|x| x.to_bits()).collect()
                            } else {
                                vec![0; len]
                            };
                            let at = b as usize * len;
                            assert_eq!(bits[at..at + len], want[..], "{name}: rank {r}, block {b}");
                        }
                        assert_eq!(
                            gathered.get_or_insert(bits.clone()),
                            bits,
                            "{name}: rank {r}"
                        );
                    }
                    Op::ReduceScatter => {
                        let sum = ranks.iter().fold(0u64, |s, &c| s.wrapping_add(input_of(c)));
                        for (j, x) in bits.iter().enumerate() {
                            let i = r as u64 * len as u64 + j as u64;
                            assert_eq!(
                                *x,
                                sum.wrapping_mul(i + 1),
                                "{name}: rank {r}, element {j}"
                            );
                        }
                    }
                }
                assert_eq!(
                    agreed.get_or_insert(Ok(who.clone())),
                    &Ok(who.clone()),
                    "{name}: rank {r} disagrees"
                );
            }
            Err(Error::TooManyFailures { .. }) if !within => {
                assert_eq!(
                    agreed.get_or_insert(Err(())),
                    &Err(()),
                    "{name}: rank {r} disagrees"
                );
            }
            Err(e) => panic!("{name}: live rank {r} got {e:?}"),
        }
    }
}

fn matrix(procs: u32, f: u32, len: usize) {
    for op in [Op::Allgather, Op::ReduceScatter] {
        let mut runs = 0;
        for set in subsets(procs, f + 1).into_iter().filter(|s| !s.is_empty()) {
            let points: &[u32] = match set.len() {
                1 => &[0, 1, 2, 3, 4, 6, 8, END],
                2 => &[0, 1, 3, END],
                _ => &[0, 2, END],
            };
            for kills in assignments(&set, points) {
                run(procs, f, op, &kills, len);
                runs += 1;
            }
        }
        assert!(runs > 20, "{runs} runs");
    }
}

#[test]
fn gather_kill_matrix_p5_f1() {
    matrix(5, 1, BLOCK);
}

#[test]
fn gather_kill_matrix_small_teams() {
    for (procs, f) in [(2, 1), (3, 1), (4, 2)] {
        matrix(procs, f, BLOCK);
    }
}

/// The same matrix with blocks of 128 KiB, which go in place on threads
/// (`src/runtime/gather.rs`: the contributions agreed by the allreduce of
/// the inputs lent where they are, then each rank's own part copied or
/// reduced from there): a victim's block is read from its copy after its
/// death, whole or not at all.
#[test]
fn gather_kill_matrix_large_blocks() {
    for (procs, f) in [(2, 1), (3, 1), (4, 2)] {
        matrix(procs, f, LARGE);
    }
}

/// Without failures every rank gets every block, in rank order, and every
/// block of the sum; one rank is the whole team.
#[test]
fn every_block_in_its_place_without_failures() {
    for procs in [1, 2, 3, 8] {
        let report = Team::builder().ranks(procs).build().unwrap().run(|comm| {
            let me = comm.rank();
            let mut all = vec![0u32; procs as usize * 2];
            let who = comm.all_gather_into(&[me, me + 100][..], &mut all[..])?;
            assert!(who.is_everyone());
            let mut mine = [0u64; 2];
            let send: Vec<u64> = (0..procs as u64 * 2).collect();
            comm.reduce_scatter_block_into(&send[..], &mut mine[..], wrapping_sum)?;
            Ok::<_, Error>((all, mine))
        });
        for (r, got) in report.returned() {
            let (all, mine) = got.as_ref().unwrap();
            let want: Vec<u32> = (0..procs).flat_map(|q| [q, q + 100]).collect();
            assert_eq!(all, &want, "P={procs} rank {r}");
            let at = u64::from(r) * 2;
            assert_eq!(mine, &[at * u64::from(procs), (at + 1) * u64::from(procs)]);
        }
    }
}

/// Bad input gets a typed error, never a hang: a reduce-scatter input that
/// does not split into equal blocks fails every rank at once; an output of
/// the wrong length fails its rank alone after it took part (the others
/// get their results); blocks of different lengths fail every rank; a
/// team whose failure scheme is the bit cannot name the blocks it holds.
#[test]
fn bad_input_is_a_typed_error_and_the_others_go_on() {
    let report = Team::builder().ranks(3).build().unwrap().run(|comm| {
        let me = comm.rank();
        let mut out = [0u64; 2];
        let uneven = comm.reduce_scatter_block_into(&[1u64; 7][..], &mut out[..], wrapping_sum);
        // Rank 1's output is one element short, then the inputs' length.
        let mut short = vec![0u64; if me == 1 { 1 } else { 2 }];
        let one_short =
            comm.reduce_scatter_block_into(&[1u64; 6][..], &mut short[..], wrapping_sum);
        let mut whole = vec![7u64; if me == 1 { 6 } else { 2 }];
        let too_long = comm.reduce_scatter_block_into(&[1u64; 6][..], &mut whole[..], wrapping_sum);
        let mut all = vec![0u8; if me == 2 { 5 } else { 6 }];
        let gather_short = comm.all_gather_into(&[me as u8; 2][..], &mut all[..]);
        let mut all = [0u8; 6];
        let blocks = if me == 0 {
            &[0u8; 3][..]
        } else {
            &[0u8; 2][..]
        };
        let uneven_blocks = comm.all_gather_into(blocks, &mut all[..]);
        (
            uneven,
            one_short.map(|_| short),
            too_long.map(|_| whole),
            gather_short,
            uneven_blocks,
        )
    });
    for (r, got) in report.returned() {
        let (uneven, one_short, too_long, gather_short, uneven_blocks) = got;
        assert!(
            matches!(uneven, Err(Error::BlockLength { len: 7, size: 3 })),
            "{uneven:?}"
        );
        if r == 1 {
            assert!(
                matches!(
                    one_short,
                    Err(Error::LengthMismatch {
                        mine: 1,
                        theirs: 2,
                        ..
                    })
                ),
                "{one_short:?}"
            );
            assert!(
                matches!(
                    too_long,
                    Err(Error::LengthMismatch {
                        mine: 6,
                        theirs: 2,
                        ..
                    })
                ),
                "{too_long:?}"
            );
        } else {
            assert_eq!(one_short.as_ref().unwrap(), &[3, 3]);
            assert_eq!(too_long.as_ref().unwrap(), &[3, 3]);
        }
        if r == 2 {
            assert!(
                matches!(
                    gather_short,
                    Err(Error::LengthMismatch {
                        mine: 5,
                        theirs: 6,
                        ..
                    })
                ),
                "{gather_short:?}"
            );
        } else {
            assert!(gather_short.is_ok(), "rank {r}: {gather_short:?}");
        }
        assert!(
            matches!(uneven_blocks, Err(Error::LengthMismatch { .. })),
            "rank {r}: {uneven_blocks:?}"
        );
    }
    let bit = Team::builder().ranks(2).failure_scheme(FailureScheme::Bit);
    for (r, got) in bit
        .build()
        .unwrap()
        .run(|comm| {
            let mut all = [0u8; 2];
            comm.all_gather_into(&1u8, &mut all[..])
        })
        .returned()
    {
        assert!(
            matches!(got, Err(Error::Config(ConfigError::Unsupported { .. }))),
            "rank {r}: {got:?}"
        );
    }
}

/// Large blocks (in place on threads): an output of the wrong length fails
/// its rank alone, after it took part (the others get their results, its
/// block among them); blocks of different lengths fail every rank.
#[test]
fn large_blocks_of_the_wrong_length_are_typed_errors() {
    let n = 1usize << 15;
    let report = Team::builder().ranks(3).build().unwrap().run(|comm| {
        let me = comm.rank();
        let block = vec![u64::from(me) + 1; n];
        let mut all = vec![0u64; if me == 2 { 3 * n - 1 } else { 3 * n }];
        let gathered = comm.all_gather_into(&block[..], &mut all[..]).map(|_| all);
        let send: Vec<u64> = (0..3 * n as u64).collect();
        let mut mine = vec![0u64; if me == 1 { n - 1 } else { n }];
        let scattered = comm
            .reduce_scatter_block_into(&send[..], &mut mine[..], wrapping_sum)
            .map(|_| mine);
        let odd = vec![1u64; if me == 0 { n + 1 } else { n }];
        let mut out = vec![0u64; 3 * n];
        let uneven = comm.all_gather_into(&odd[..], &mut out[..]).map(drop);
        (gathered, scattered, uneven)
    });
    for (r, (gathered, scattered, uneven)) in report.returned() {
        match gathered {
            Ok(all) => {
                assert_ne!(r, 2);
                for (b, part) in all.chunks(n).enumerate() {
                    assert!(
                        part.iter().all(|&x| x == b as u64 + 1),
                        "rank {r} block {b}"
                    );
                }
            }
            Err(e) => assert!(
                r == 2
                    && matches!(e, Error::LengthMismatch { mine, theirs, .. } if *mine == 3 * n - 1 && *theirs == 3 * n),
                "rank {r}: {e:?}"
            ),
        }
        match scattered {
            Ok(mine) => {
                assert_ne!(r, 1);
                let at = r as u64 * n as u64;
                assert!(mine
                    .iter()
                    .enumerate()
                    .all(|(j, &x)| x == 3 * (at + j as u64)));
            }
            Err(e) => assert!(
                r == 1
                    && matches!(e, Error::LengthMismatch { mine, theirs, .. } if *mine == n - 1 && *theirs == n),
                "rank {r}: {e:?}"
            ),
        }
        assert!(
            matches!(uneven, Err(Error::LengthMismatch { .. })),
            "rank {r}: {uneven:?}"
        );
    }
}
