//! The properties results are checked against, in one place for both
//! engines: the simulator's experiments, the CLI's `run` and the tests of
//! the thread runtime use the same inputs and the same checks.
//!
//! Rank `r` contributes [`input_of`]`(r)`, a 64-bit pseudo-random number,
//! and the operation is wrapping addition ([`add`]): a result is right if it
//! equals the sum over every live rank plus some subset of the ranks that
//! died during the operation ([`includes_exactly`], the inclusion property
//! of the reduce paper, Section 4.1, properties 3 and 4). A missing or
//! doubled input changes the sum, so the check catches both (with
//! probability 1 - 2^-64 per run). [`agree`] is allreduce's consistency
//! (Section 5.1: every live rank delivers the same value).

use crate::types::{Rank, Tick};

/// The death time of a rank that never fails (the simulator's `NEVER`).
const NEVER: Tick = Tick::MAX;

/// Rank `r`'s input in simulated reduces and allreduces (splitmix64 of r).
pub fn input_of(rank: Rank) -> u64 {
    let mut z = (rank as u64)
        .wrapping_add(1)
        .wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The simulator's reduction: wrapping addition.
pub fn add(acc: &mut u64, other: &u64) {
    *acc = acc.wrapping_add(*other);
}

/// True if `value` is the sum of every rank with `death == NEVER` plus a
/// subset of those that died during the operation (`0 < death < NEVER`):
/// the inclusion property of reduce (Section 4.1, properties 3 and 4).
pub fn includes_exactly(value: u64, death: &[Tick]) -> bool {
    let live: u64 = (0..death.len())
        .filter(|&r| death[r] == NEVER)
        .fold(0u64, |s, r| s.wrapping_add(input_of(r as Rank)));
    let dying: Vec<u64> = (0..death.len())
        .filter(|&r| death[r] != NEVER && death[r] > 0)
        .map(|r| input_of(r as Rank))
        .collect();
    let rest = value.wrapping_sub(live);
    if dying.len() > 20 {
        // Too many subsets to try: only the two extremes.
        return rest == 0 || rest == dying.iter().fold(0u64, |s, &w| s.wrapping_add(w));
    }
    (0u32..1 << dying.len()).any(|mask| {
        let sum = (0..dying.len())
            .filter(|i| mask >> i & 1 == 1)
            .fold(0u64, |s, i| s.wrapping_add(dying[i]));
        sum == rest
    })
}

/// True if `value` is the sum of every rank's input but those of `missing`,
/// each of which failed (`death < NEVER`), and `count` (the exact number
/// missing) agrees: what a reduce's list of missing inputs promises
/// ([`crate::protocol::reduce::ReduceOutput::Root`]). With more missing
/// ranks than the list holds, only the count and the inclusion property
/// ([`includes_exactly`]) are checked.
pub fn lacks_exactly(value: u64, count: u32, missing: &[Rank], death: &[Tick]) -> bool {
    if missing.len() < count as usize {
        return includes_exactly(value, death);
    }
    let mut sorted = missing.to_vec();
    sorted.sort_unstable();
    sorted.dedup();
    let listed_once = sorted.len() == missing.len() && missing.len() == count as usize;
    let all_failed = missing
        .iter()
        .all(|&r| death.get(r as usize).is_some_and(|&d| d != NEVER));
    let sum = (0..death.len() as Rank)
        .filter(|r| !missing.contains(r))
        .fold(0u64, |s, r| s.wrapping_add(input_of(r)));
    listed_once && all_failed && sum == value
}

/// Element `i` of a vector that carries `value`: `value * (2i + 1)`,
/// wrapping. The factor is odd, so invertible modulo 2^64: element by
/// element, a sum of such vectors is the vector of the sum of their values
/// ([`value_of_vector`] takes it back out), so checking a vector's result
/// is checking one value, and elements that disagree on the contributions
/// show.
pub fn vector_element(value: u64, i: usize) -> u64 {
    value.wrapping_mul(2 * i as u64 + 1)
}

/// The value element `i` of a vector carries (the inverse of
/// [`vector_element`]).
pub fn element_value(element: u64, i: usize) -> u64 {
    // The inverse of an odd a modulo 2^64 by Newton's iteration: each step
    // doubles the correct low bits (a is its own inverse modulo 8).
    let a = 2 * i as u64 + 1;
    let inverse = (0..6).fold(a, |x, _| {
        x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)))
    });
    element.wrapping_mul(inverse)
}

/// The value a vector of [`vector_element`]s carries, if every element
/// carries the same (a vector whose chunks were reduced over different
/// contributions does not); `None` for an empty vector too.
pub fn value_of_vector(vector: &[u64]) -> Option<u64> {
    let v = *vector.first()?;
    vector
        .iter()
        .enumerate()
        .all(|(i, &x)| element_value(x, i) == v)
        .then_some(v)
}

/// True when every value is the same (and there is at least one): the
/// agreement of allreduce (Section 5.1) over the live ranks' results.
pub fn agree<'a>(values: impl IntoIterator<Item = &'a u64>) -> bool {
    let mut values = values.into_iter();
    match values.next() {
        Some(first) => values.all(|v| v == first),
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_carry_their_sum_in_every_element_and_a_torn_one_shows() {
        let (a, b) = (input_of(1), input_of(2));
        let sum: Vec<u64> = (0..1000)
            .map(|i| vector_element(a, i).wrapping_add(vector_element(b, i)))
            .collect();
        assert_eq!(value_of_vector(&sum), Some(a.wrapping_add(b)));
        let mut torn = sum.clone();
        torn[999] = torn[999].wrapping_sub(vector_element(b, 999));
        assert_eq!(value_of_vector(&torn), None);
        assert_eq!(value_of_vector(&[]), None);
    }

    #[test]
    fn a_missing_list_is_checked_rank_by_rank() {
        let death = [NEVER, 5, 0, NEVER];
        let all = |skip: &[Rank]| {
            (0..4)
                .filter(|r| !skip.contains(r))
                .fold(0u64, |s, r| s.wrapping_add(input_of(r)))
        };
        assert!(lacks_exactly(all(&[2]), 1, &[2], &death));
        assert!(lacks_exactly(all(&[1, 2]), 2, &[2, 1], &death));
        assert!(!lacks_exactly(all(&[2]), 2, &[2, 1], &death), "1 is in");
        assert!(!lacks_exactly(all(&[0]), 1, &[0], &death), "0 lives");
        assert!(!lacks_exactly(all(&[2]), 2, &[2, 2], &death), "twice");
        assert!(!lacks_exactly(all(&[2]), 0, &[], &death), "2 unlisted");
        // More missing than listed: the inclusion property alone.
        assert!(lacks_exactly(all(&[1, 2]), 3, &[2], &death));
    }

    #[test]
    fn inclusion_accepts_exactly_the_live_plus_a_subset_of_the_dying() {
        // Ranks 0 and 3 live, 1 dies during the operation, 2 dead before.
        let death = [NEVER, 5, 0, NEVER];
        let live = input_of(0).wrapping_add(input_of(3));
        assert!(includes_exactly(live, &death));
        assert!(includes_exactly(live.wrapping_add(input_of(1)), &death));
        assert!(
            !includes_exactly(live.wrapping_add(input_of(2)), &death),
            "the dead before"
        );
        assert!(
            !includes_exactly(input_of(0), &death),
            "a live rank missing"
        );
        assert!(
            !includes_exactly(live.wrapping_add(input_of(3)), &death),
            "a duplicate"
        );
        assert!(agree(&[7, 7, 7]) && !agree(&[7, 8]) && !agree(&[]));
    }
}
