//! Sub-teams (`Collectives::split`, `src/gather.rs`) on threads: the ranks
//! of a color form a team numbered by key; each sub-team keeps the fault
//! tolerance on its own (its budget, its failures); a rank dying inside
//! the split is in its sub-team on every member or on none; a split after
//! a shrink; a team that cannot name contributors refuses it.

use std::time::Duration;

use corrected::protocol::reduce::FailureScheme;
use corrected::runtime::{Fault, FaultSchedule, Team};
use corrected::types::Rank;
use corrected::{Collectives, ConfigError, Error};

mod common;
use common::assignments;

/// A team of `procs` ranks, f = 1, with `faults`.
fn team_with(procs: u32, faults: FaultSchedule) -> Team {
    Team::builder()
        .ranks(procs)
        .fault_budget(1)
        .faults(faults)
        .failure_timeout(Duration::from_millis(500))
        .build()
        .unwrap()
}

fn wrapping_sum(a: &u64, b: &u64) -> u64 {
    a.wrapping_add(*b)
}

/// Six ranks split by parity, keys reversing the order: each sub-team is
/// its color's ranks, numbered by key; an allreduce in each sums its own
/// members' inputs (small, and large enough for the lazy path at the same
/// time in both), a broadcast reaches its own members, and each may split
/// again.
#[test]
fn each_color_is_a_team_numbered_by_key() {
    let team = Team::builder().ranks(6).fault_budget(1).build().unwrap();
    let report = team.run(|comm| -> Result<_, Error> {
        let me = comm.rank();
        let members = comm.split(me % 2, 100 - me)?;
        let (rank, size) = (comm.rank(), comm.size());
        let mut sum = 0u64;
        comm.all_reduce_into(&u64::from(me), &mut sum, wrapping_sum)?;
        let big = vec![u64::from(me); 1 << 16];
        let mut big_sum = vec![0u64; 1 << 16];
        comm.all_reduce_into(&big[..], &mut big_sum[..], wrapping_sum)?;
        assert!(big_sum.iter().all(|&x| x == sum));
        let mut from_first = if rank == 0 { u64::from(me) } else { 0 };
        comm.broadcast_into(0, &mut from_first)?;
        // Again: the halves of each sub-team, by new rank.
        let again = comm.split(rank / 2, rank)?;
        Ok((members, rank, size, sum, from_first, again, comm.size()))
    });
    assert_eq!(report.returned().count(), 6, "every rank returns");
    for (me, got) in report.returned() {
        let (members, rank, size, sum, first, again, last_size) = got.clone().unwrap();
        let mine: Vec<Rank> = (0..6).rev().filter(|r| r % 2 == me % 2).collect();
        assert_eq!(members, mine, "rank {me}: by key, descending rank");
        assert_eq!(rank, mine.iter().position(|&r| r == me).unwrap() as u32);
        assert_eq!(size, 3);
        assert_eq!(
            sum,
            mine.iter().map(|&r| u64::from(r)).sum::<u64>(),
            "rank {me}"
        );
        assert_eq!(first, u64::from(mine[0]), "rank {me}");
        let half: Vec<Rank> = (0..3).filter(|r| r / 2 == rank / 2).collect();
        assert_eq!(again, half, "rank {me}");
        assert_eq!(last_size, half.len() as u32);
    }
}

/// A failure in one sub-team is that sub-team's: the other's allreduces
/// hold all of its inputs, the failed one's survivors go on without the
/// dead rank within their own budget; a rank dead before the split is in
/// no sub-team.
#[test]
fn a_failure_concerns_only_its_sub_team() {
    // Rank 4 is dead before the split (call 0); rank 2 dies in its second
    // allreduce after the split (call 2).
    let faults = FaultSchedule::none()
        .at(4, 0, Fault::Dead)
        .at(2, 2, Fault::DieAfterSends(0));
    let team = team_with(8, faults);
    let report = team.run(|comm| -> Result<_, Error> {
        let me = comm.rank();
        let members = comm.split(u32::from(me >= 4), me)?;
        let mut sums = Vec::new();
        for _ in 0..3 {
            let mut sum = 0u64;
            let who = comm.all_reduce_into_contributors(&(1u64 << me), &mut sum, wrapping_sum)?;
            sums.push((sum, who.len(), comm.failed_ranks()));
        }
        Ok((members, sums))
    });
    assert_eq!(report.returned().count(), 8, "every rank returns");
    for (me, got) in report.returned().filter(|(r, _)| ![2, 4].contains(r)) {
        let (members, sums) = got.clone().unwrap();
        if me < 4 {
            assert_eq!(members, [0, 1, 2, 3], "rank {me}");
            // Rank 2 dies entering its second allreduce: in the first.
            assert_eq!((sums[0].0, sums[0].1), (0b1111, 4), "rank {me}");
            // From the death on: without rank 2 (new rank 2), known failed.
            assert_eq!(sums[2], (0b1011, 3, vec![2]), "rank {me}");
        } else {
            assert_eq!(members, [5, 6, 7], "rank {me}: the dead rank 4 is in none");
            for s in &sums {
                assert_eq!(
                    s,
                    &(0b1110_0000, 3, vec![]),
                    "rank {me}: untouched by rank 2"
                );
            }
        }
    }
}

/// A rank killed at any point of the split's allgather (before it, after
/// each of its first sends, at its end) is in its sub-team on every member
/// or on none, and every live rank is in its own: the members' lists
/// agree, and an allreduce in each sub-team then counts exactly the live
/// members (the dead one found failed there if it was kept).
#[test]
fn a_rank_dying_inside_the_split_is_in_its_sub_team_everywhere_or_nowhere() {
    let procs = 5;
    for victim in 0..procs {
        for (_, point) in assignments(&[victim], &[0, 1, 2, 3, 5, 1 << 20]).concat() {
            let faults = FaultSchedule::none().at(victim, 0, Fault::DieAfterSends(point));
            let team = team_with(procs, faults);
            let report = team.run(|comm| -> Result<_, Error> {
                let me = comm.rank();
                let members = comm.split(me % 2, 0)?;
                let mut count = 0u64;
                comm.all_reduce_into(&1u64, &mut count, wrapping_sum)?;
                Ok((members, count))
            });
            let all: Vec<_> = report.returned().map(|(r, g)| (r, g.clone())).collect();
            let name = format!("victim {victim} after {point} sends: {all:?}");
            assert_eq!(report.returned().count(), procs as usize, "{name}");
            let mut lists: [Option<Vec<Rank>>; 2] = [None, None];
            for (me, got) in report.returned().filter(|(r, _)| *r != victim) {
                let (members, count) = got.clone().unwrap_or_else(|e| panic!("{name}: {e}"));
                let live = members.iter().filter(|&&r| r != victim).count() as u64;
                assert!(members.contains(&me), "{name}");
                assert!(members.iter().all(|r| r % 2 == me % 2), "{name}");
                let want: Vec<Rank> = (0..procs)
                    .filter(|r| r % 2 == me % 2 && *r != victim)
                    .collect();
                assert!(
                    want.iter().all(|r| members.contains(r)),
                    "{name}: {members:?}"
                );
                assert_eq!(count, live, "{name}: rank {me}");
                let list = lists[(me % 2) as usize].get_or_insert(members.clone());
                assert_eq!(list, &members, "{name}: rank {me} disagrees");
            }
        }
    }
}

/// A split after a shrink numbers from the survivors; one rank may be a
/// team alone (f clamped to 0) and still runs every collective.
#[test]
fn a_split_after_a_shrink_and_a_team_of_one() {
    let faults = FaultSchedule::none().at(1, 0, Fault::Dead);
    let team = Team::builder()
        .ranks(4)
        .fault_budget(1)
        .faults(faults)
        .build()
        .unwrap();
    let report = team.run(|comm| -> Result<_, Error> {
        // Rank 1 dead from the barrier on: known failed to all after it
        // (a rank that dies during the shrink's agreement may be left out
        // of its list, and found failed later).
        comm.barrier()?;
        let left_out = comm.shrink()?;
        assert_eq!((left_out, comm.size()), (vec![1], 3));
        // Survivors 0, 2, 3 are now 0, 1, 2: rank 0 alone, 1 and 2 together.
        let me = comm.rank();
        let members = comm.split(u32::from(me > 0), 0)?;
        let mut sum = 0u64;
        comm.all_reduce_into(&10u64, &mut sum, wrapping_sum)?;
        comm.barrier()?;
        Ok((me, members, comm.size(), comm.fault_budget(), sum))
    });
    let mut seen = Vec::new();
    for (r, got) in report.returned().filter(|(r, _)| *r != 1) {
        let (me, members, size, f, sum) = got.clone().unwrap();
        if me == 0 {
            assert_eq!((members, size, f, sum), (vec![0], 1, 0, 10), "rank {r}");
        } else {
            assert_eq!((members, size, f, sum), (vec![1, 2], 2, 1, 20), "rank {r}");
        }
        seen.push(me);
    }
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2]);
}

/// A team whose failure scheme is the bit cannot name whose colors it
/// gathered: every rank gets the same typed error, and the team goes on
/// whole.
#[test]
fn a_team_that_cannot_name_contributors_refuses_a_split() {
    let team = Team::builder()
        .ranks(3)
        .failure_scheme(FailureScheme::Bit)
        .build()
        .unwrap();
    let report = team.run(|comm| {
        let refused = comm.split(0, 0);
        (refused, comm.size())
    });
    assert_eq!(report.returned().count(), 3);
    for (r, (refused, size)) in report.returned() {
        assert!(
            matches!(refused, Err(Error::Config(ConfigError::Unsupported { .. }))),
            "rank {r}: {refused:?}"
        );
        assert_eq!(*size, 3);
    }
}
