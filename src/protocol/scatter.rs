//! A large allreduce by blocks between processes: reduce-scatter, then
//! allgather, each rank owning one block of the vector, with sends straight
//! to the owner and from it (not in the papers; the guarantee of a large
//! allreduce on threads, every element over one and the same set of inputs,
//! kept where the inputs are not in shared memory).
//!
//! The thread runtime reduces a large vector by chunks only after the ranks
//! agree on the inputs (`value::lazy`), because every input stays readable
//! in shared memory. Between processes an input is readable only where it
//! was sent, and a process that dies leaves its input at the owners it
//! reached and nowhere else. So this core does the reverse: it computes
//! first and lets the engine agree afterwards.
//!
//! Each rank sends block `j` of its input to rank `j` ([`Tag::Scatter`]).
//! Rank `j` folds the `P` blocks `j` in rank order (so every rank of every
//! run computes the same bits) and sends the result to every other rank
//! ([`Tag::Gather`]). A block whose inputs cannot all arrive, because a
//! sender failed first, is not computed: its owner sends *none* instead, so
//! that nobody waits for it. The output is [`ScatterOutput::Complete`] when
//! every block arrived, each the reduction over all `P` inputs; else
//! [`ScatterOutput::Incomplete`].
//!
//! A complete output on one rank and an incomplete one on another are both
//! possible when a rank fails during the operation, so the output is not
//! the result. The engine agrees on it (an allreduce of a small verdict
//! with the guarantees of the reduce paper's Section 5.1) and delivers the
//! blocks only if every live rank had them all; otherwise every live rank
//! falls back to the eager allreduce on its input. Either way every element
//! of every live rank's result is the reduction over one and the same set
//! of inputs: all `P` (a rank that failed after sending its blocks is in
//! every element), or the fallback's set.

use crate::protocol::reduce::Combine;
use crate::protocol::{Event, Header, Leave, Msg, Protocol, Tag, Transmit};
use crate::types::{Collective, OpId, Rank, Tick};

/// Values from this many bytes are reduced by blocks between processes
/// (the MPI engine's allreduce; smaller ones combine as they travel).
/// Measured: see docs/benchmarks.md.
pub const BLOCKS_MIN_BYTES: usize = 512 * 1024;

/// What a rank has after the blocks were exchanged.
#[derive(Clone, Debug, PartialEq)]
pub enum ScatterOutput<P> {
    /// Every block, block `j` the reduction over all ranks' blocks `j` in
    /// rank order.
    Complete(Vec<P>),
    /// Some block will never arrive: its owner, or a rank whose input it
    /// needs, failed.
    Incomplete,
}

impl<P> ScatterOutput<P> {
    /// True for [`ScatterOutput::Complete`].
    pub fn is_complete(&self) -> bool {
        matches!(self, ScatterOutput::Complete(_))
    }
}

/// One rank's state in one allreduce by blocks.
///
/// The ranks taking part are the operation's *members* (the engine leaves
/// out ranks that all live ranks agree have failed); blocks and owners are
/// numbered by position among them.
#[derive(Debug)]
pub struct ScatterAllreduce<P, O> {
    op_id: OpId,
    op: O,
    /// The members, in rank order.
    members: Vec<Rank>,
    /// This rank's position among them.
    me: usize,
    /// This rank's input, block `j` for member `j` (taken as it is sent).
    mine: Vec<Option<P>>,
    /// Next member (offset from `me`) to send its input block to.
    scatter_next: usize,
    /// The inputs of the block this rank owns, by member.
    inputs: Vec<Option<P>>,
    /// The owned block's reduction, `Some(None)` if it cannot be computed.
    owned: Option<Option<P>>,
    /// Next member (offset from `me`) to send the owned block to.
    gather_next: usize,
    /// Every block, by owner, as it arrives.
    blocks: Vec<Option<P>>,
    /// Owners heard from (a block or none) or known failed.
    settled: Vec<bool>,
    failed: Vec<bool>,
    started: bool,
    incomplete: bool,
    /// The output is known (taken or not): it is given once.
    decided: bool,
    output: Option<ScatterOutput<P>>,
}

impl<P: Clone + Send + 'static, O: Combine<P>> ScatterAllreduce<P, O> {
    /// The core of rank `me` for operation `op_id` among `members` (ranks
    /// in increasing order, `me` one of them), with `blocks`, this rank's
    /// input cut into one block per member (block `j` is member `j`'s to
    /// reduce), combined with `op`.
    pub fn new(
        me: Rank,
        op_id: OpId,
        members: Vec<Rank>,
        blocks: Vec<P>,
        op: O,
    ) -> Result<Self, crate::Error> {
        let n = members.len();
        let me = members.iter().position(|&r| r == me);
        let (Some(me), true) = (me, blocks.len() == n) else {
            return Err(crate::Error::Config(crate::ConfigError::Unsupported {
                what: "an allreduce by blocks without one block per member, this rank included",
                why: "every member owns one block",
            }));
        };
        Ok(ScatterAllreduce {
            op_id,
            op,
            members,
            me,
            mine: blocks.into_iter().map(Some).collect(),
            scatter_next: 1,
            inputs: vec![None; n],
            owned: None,
            gather_next: 1,
            blocks: vec![None; n],
            settled: vec![false; n],
            failed: vec![false; n],
            started: false,
            incomplete: false,
            decided: false,
            output: None,
        })
    }

    fn count(&self) -> usize {
        self.members.len()
    }

    /// The member `offset` places after this one, by position.
    fn peer(&self, offset: usize) -> usize {
        (self.me + offset) % self.count()
    }

    fn position(&self, rank: Rank) -> Option<usize> {
        self.members.binary_search(&rank).ok()
    }

    /// Reduces the owned block once every input is in, or gives it up
    /// once a member whose input is missing failed.
    fn try_reduce(&mut self) {
        if self.owned.is_some() || !self.started {
            return;
        }
        if (0..self.count()).any(|j| self.inputs[j].is_none() && self.failed[j]) {
            self.owned = Some(None);
            self.settle(self.me, None);
            return;
        }
        if self.inputs.iter().any(Option::is_none) {
            return;
        }
        let mut inputs = self
            .inputs
            .iter_mut()
            .map(|i| i.take().expect("every input is in"));
        let mut acc = inputs.next().expect("a team has a rank");
        for other in inputs {
            self.op.combine(&mut acc, &other);
        }
        self.owned = Some(Some(acc.clone()));
        self.settle(self.me, Some(acc));
    }

    /// Owner `owner`'s block is known: `block`, or none.
    fn settle(&mut self, owner: usize, block: Option<P>) {
        if self.settled[owner] {
            return;
        }
        self.settled[owner] = true;
        match block {
            Some(b) => self.blocks[owner] = Some(b),
            None => self.incomplete = true,
        }
        self.try_decide();
    }

    fn try_decide(&mut self) {
        if self.decided {
            return;
        }
        if self.incomplete {
            self.output = Some(ScatterOutput::Incomplete);
        } else if self.settled.iter().all(|s| *s) {
            let blocks = self
                .blocks
                .iter_mut()
                .map(|b| b.take().expect("settled with a block"));
            self.output = Some(ScatterOutput::Complete(blocks.collect()));
        }
        self.decided = self.output.is_some();
    }

    /// Every send this rank owes is made: its input to every live owner,
    /// and its owned block (or none) to every live member.
    fn sends_done(&self) -> bool {
        self.started && self.scatter_next >= self.count() && self.gather_next >= self.count()
    }
}

impl<P: Clone + Send + 'static, O: Combine<P>> Protocol for ScatterAllreduce<P, O> {
    type Payload = Option<P>;
    type Output = ScatterOutput<P>;

    fn handle(&mut self, _now: Tick, event: Event<Msg<Option<P>>>) {
        match event {
            Event::Start => {
                self.started = true;
                self.inputs[self.me] = self.mine[self.me].take();
            }
            Event::Message { from, msg } => {
                let Some(from) = self.position(from) else {
                    return;
                };
                match (msg.tag, msg.payload) {
                    (Tag::Scatter, Some(block)) if self.inputs[from].is_none() => {
                        self.inputs[from] = Some(block);
                    }
                    (Tag::Gather, block) => self.settle(from, block),
                    _ => {}
                }
            }
            Event::PeerFailed(r) => match self.position(r) {
                Some(j) if j != self.me => {
                    self.failed[j] = true;
                    self.settle(j, None);
                }
                _ => {}
            },
            Event::Timer => {}
        }
        self.try_reduce();
    }

    fn poll_transmit(&mut self, _now: Tick) -> Option<Transmit<Msg<Option<P>>>> {
        if !self.started {
            return None;
        }
        let header = self.header();
        while self.scatter_next < self.count() {
            let j = self.peer(self.scatter_next);
            self.scatter_next += 1;
            let block = self.mine[j].take();
            if !self.failed[j] {
                let msg = header.msg(Tag::Scatter, block);
                return Some(Transmit {
                    to: self.members[j],
                    msg,
                });
            }
        }
        let owned = self.owned.as_ref()?;
        while self.gather_next < self.count() {
            let j = self.peer(self.gather_next);
            self.gather_next += 1;
            if !self.failed[j] {
                let msg = header.msg(Tag::Gather, owned.clone());
                return Some(Transmit {
                    to: self.members[j],
                    msg,
                });
            }
        }
        None
    }

    fn poll_deadline(&self) -> Option<Tick> {
        None
    }

    fn take_output(&mut self) -> Option<ScatterOutput<P>> {
        self.output.take()
    }

    fn is_quiescent(&self) -> bool {
        !self.started
            || (self.scatter_next >= self.count()
                && (self.owned.is_none() || self.gather_next >= self.count()))
    }

    fn header(&self) -> Header {
        Header::any_root(self.op_id, Collective::Allreduce)
    }

    /// Once this rank's sends are made: nobody waits on it after that.
    fn may_return(&self) -> Leave {
        Leave::once(self.sends_done())
    }

    fn is_finished(&self) -> bool {
        self.sends_done()
    }

    /// Once a later allreduce has completed, every live rank has entered
    /// it, so none still waits for this one's blocks.
    fn retired_by(&self, completed: &Header) -> bool {
        completed.op > self.op_id && completed.kind.is_allreduce()
    }

    /// A member whose input block this rank still waits for, else one
    /// whose reduced block it still waits for (each the first around the
    /// ring from this one). Inputs first: every member sends its input to
    /// every other, so a silent member's input is missing everywhere and
    /// every member's detector watches the silent one itself. A missing
    /// reduced block only points at an owner that waits in turn (for that
    /// same input), alive and beating.
    fn awaiting(&self) -> Option<Rank> {
        if self.decided && self.owned.is_some() {
            return None;
        }
        let live = |j: &usize| !self.failed[*j];
        let mut ring = (1..self.count()).map(|k| self.peer(k)).filter(live);
        let input = self.owned.is_none();
        let missing = ring.clone().find(|&j| input && self.inputs[j].is_none());
        missing
            .or_else(|| ring.find(|&j| !self.settled[j]))
            .map(|j| self.members[j])
    }
}

/// The verdict a rank brings to the agreement after the blocks
/// ([`ScatterOutput`]): whether it has every block, its input's length (so
/// that the agreement also finds inputs of different lengths), the ranks
/// it knows failed (so that the next allreduce by blocks leaves them out:
/// all live ranks agree on the verdict, hence on the members), and the
/// ranks it left out of this one (ranks that did not agree on the members
/// fall back). Combined element-wise: the worst verdict, the shortest and
/// the longest length, the union of the failed ranks, the union and the
/// intersection of the ranks left out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Some rank lacks a block.
    pub incomplete: bool,
    /// The shortest input length (in bytes) among the ranks combined.
    pub shortest: u64,
    /// The longest.
    pub longest: u64,
    /// Ranks known failed: rank `r` is bit `r % 64` of word `r / 64`.
    failed: Vec<u64>,
    /// Ranks some rank left out of the operation.
    left_out_any: Vec<u64>,
    /// Ranks every rank left out.
    left_out_all: Vec<u64>,
}

/// `ranks` of a team of `procs`, one bit each.
fn bits(procs: u32, ranks: &[Rank]) -> Vec<u64> {
    let mut bits = vec![0u64; (procs as usize).div_ceil(64)];
    for &r in ranks.iter().filter(|&&r| r < procs) {
        bits[r as usize / 64] |= 1 << (r % 64);
    }
    bits
}

impl Verdict {
    /// A rank's own verdict: `complete` or not, with an input of `len`
    /// bytes, in a team of `procs` ranks of which it knows `failed` failed
    /// and left `left_out` out of the operation.
    pub fn new(complete: bool, len: u64, procs: u32, failed: &[Rank], left_out: &[Rank]) -> Self {
        Verdict {
            incomplete: !complete,
            shortest: len,
            longest: len,
            failed: bits(procs, failed),
            left_out_any: bits(procs, left_out),
            left_out_all: bits(procs, left_out),
        }
    }

    /// `self ∘ other`: associative and commutative.
    pub fn combine(&mut self, other: &Verdict) {
        self.incomplete |= other.incomplete;
        self.shortest = self.shortest.min(other.shortest);
        self.longest = self.longest.max(other.longest);
        for (a, b) in self.failed.iter_mut().zip(&other.failed) {
            *a |= b;
        }
        for (a, b) in self.left_out_any.iter_mut().zip(&other.left_out_any) {
            *a |= b;
        }
        for (a, b) in self.left_out_all.iter_mut().zip(&other.left_out_all) {
            *a &= b;
        }
    }

    /// Whether `rank` is known failed.
    pub fn has_failed(&self, rank: Rank) -> bool {
        self.failed
            .get(rank as usize / 64)
            .is_some_and(|w| w & (1 << (rank % 64)) != 0)
    }

    /// As words, for a value that travels as plain data: the flag, the
    /// two lengths, the three sets of ranks.
    pub fn to_words(&self) -> Vec<u64> {
        let head = [u64::from(self.incomplete), self.shortest, self.longest];
        let sets = [&self.failed, &self.left_out_any, &self.left_out_all];
        head.into_iter()
            .chain(sets.into_iter().flatten().copied())
            .collect()
    }

    /// The number of words of a verdict of a team of `procs`.
    pub fn words(procs: u32) -> usize {
        3 + 3 * (procs as usize).div_ceil(64)
    }

    /// From [`Verdict::to_words`] of a verdict of a team of `procs`;
    /// `None` for words of another length.
    pub fn from_words(words: &[u64], procs: u32) -> Option<Self> {
        if words.len() != Verdict::words(procs) {
            return None;
        }
        let n = (procs as usize).div_ceil(64);
        Some(Verdict {
            incomplete: words[0] != 0,
            shortest: words[1],
            longest: words[2],
            failed: words[3..3 + n].to_vec(),
            left_out_any: words[3 + n..3 + 2 * n].to_vec(),
            left_out_all: words[3 + 2 * n..].to_vec(),
        })
    }

    /// What the ranks do once they agree on this verdict.
    pub fn decision(&self) -> Decision {
        if self.shortest != self.longest {
            Decision::LengthsDiffer(self.shortest, self.longest)
        } else if self.incomplete || self.left_out_any != self.left_out_all {
            Decision::FallBack
        } else {
            Decision::Deliver
        }
    }
}

/// What the engine does once the verdict is agreed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Deliver the blocks: every live rank has them all.
    Deliver,
    /// Every live rank runs the eager allreduce on its input: some live
    /// rank lacks a block, or the ranks did not agree on the members.
    FallBack,
    /// Inputs of different lengths met (bytes: the shortest, the longest).
    LengthsDiffer(u64, u64),
}

#[cfg(test)]
mod tests {
    use super::*;

    type Core = ScatterAllreduce<Vec<u64>, fn(&mut Vec<u64>, &Vec<u64>)>;

    #[allow(clippy::ptr_arg)] // the payload type is `Vec<u64>`
    fn add(acc: &mut Vec<u64>, other: &Vec<u64>) {
        for (a, b) in acc.iter_mut().zip(other) {
            *a += b;
        }
    }

    /// Rank r's input: 2^r in every element, cut into `procs` blocks of 2.
    fn core(me: Rank, procs: u32) -> Core {
        members_core(me, (0..procs).collect())
    }

    fn members_core(me: Rank, members: Vec<Rank>) -> Core {
        let blocks = members.iter().map(|_| vec![1u64 << me; 2]).collect();
        let add = add as fn(&mut Vec<u64>, &Vec<u64>);
        ScatterAllreduce::new(me, 7, members, blocks, add).unwrap()
    }

    /// Delivers every message in send order, one round per rank in turn,
    /// with the ranks in `dead` silent from the start and known failed.
    fn run(procs: u32, dead: &[Rank]) -> Vec<Option<ScatterOutput<Vec<u64>>>> {
        let mut cores: Vec<Core> = (0..procs).map(|r| core(r, procs)).collect();
        let mut outputs = vec![None; procs as usize];
        let live = |r: Rank| !dead.contains(&r);
        for r in (0..procs).filter(|&r| live(r)) {
            cores[r as usize].handle(0, Event::Start);
            for &d in dead {
                cores[r as usize].handle(0, Event::PeerFailed(d));
            }
        }
        loop {
            let mut moved = false;
            for r in (0..procs).filter(|&r| live(r)) {
                while let Some(t) = cores[r as usize].poll_transmit(0) {
                    moved = true;
                    if live(t.to) {
                        let msg = t.msg;
                        cores[t.to as usize].handle(0, Event::Message { from: r, msg });
                    }
                }
            }
            for r in (0..procs).filter(|&r| live(r)) {
                if let Some(o) = cores[r as usize].take_output() {
                    // The contract: the output exactly once.
                    assert!(outputs[r as usize].is_none(), "rank {r}: a second output");
                    outputs[r as usize] = Some(o);
                }
            }
            if !moved {
                break;
            }
        }
        for r in (0..procs).filter(|&r| live(r)) {
            assert!(cores[r as usize].is_finished(), "rank {r} owes sends");
            assert_eq!(cores[r as usize].awaiting(), None);
        }
        outputs
    }

    #[test]
    fn fault_free_every_block_is_the_sum_over_every_rank() {
        for procs in 1..=6 {
            for (r, out) in run(procs, &[]).into_iter().enumerate() {
                let all = (1u64 << procs) - 1;
                assert_eq!(
                    out,
                    Some(ScatterOutput::Complete(vec![vec![all; 2]; procs as usize])),
                    "rank {r} of {procs}"
                );
            }
        }
    }

    #[test]
    fn a_rank_dead_from_the_start_leaves_every_live_rank_incomplete() {
        for procs in 2..=5 {
            for dead in 0..procs {
                let outs = run(procs, &[dead]);
                for r in (0..procs).filter(|&r| r != dead) {
                    assert_eq!(outs[r as usize], Some(ScatterOutput::Incomplete));
                }
            }
        }
    }

    #[test]
    fn an_input_lost_in_flight_gives_the_block_up_and_nobody_waits() {
        // Rank 2 dies after its first send (to rank 0): rank 0's block has
        // all inputs, rank 1's and 3's do not.
        let procs = 4;
        let mut cores: Vec<Core> = (0..procs).map(|r| core(r, procs)).collect();
        for c in &mut cores {
            c.handle(0, Event::Start);
        }
        let first = cores[2].poll_transmit(0).unwrap();
        assert_eq!((first.to, first.msg.tag), (3, Tag::Scatter));
        let second = cores[2].poll_transmit(0).unwrap();
        assert_eq!(second.to, 0);
        cores[0].handle(
            0,
            Event::Message {
                from: 2,
                msg: second.msg,
            },
        );
        for r in [0, 1, 3] {
            cores[r].handle(0, Event::PeerFailed(2));
        }
        let mut outs = vec![None; 4];
        for _ in 0..3 {
            for r in [0usize, 1, 3] {
                while let Some(t) = cores[r].poll_transmit(0) {
                    if t.to != 2 {
                        cores[t.to as usize].handle(
                            0,
                            Event::Message {
                                from: r as Rank,
                                msg: t.msg,
                            },
                        );
                    }
                }
                if let Some(o) = cores[r].take_output() {
                    outs[r] = Some(o);
                }
            }
        }
        for r in [0usize, 1, 3] {
            assert_eq!(outs[r], Some(ScatterOutput::Incomplete), "rank {r}");
            assert!(cores[r].is_finished());
        }
    }

    #[test]
    fn every_member_awaits_a_silent_members_input_not_the_owners_it_holds_up() {
        // Rank 1 is silent: the others' owned blocks wait for its input,
        // so their reduced blocks never come either. Each must point its
        // detector at rank 1, the one that does not run.
        let procs = 4;
        let mut cores: Vec<Core> = (0..procs).map(|r| core(r, procs)).collect();
        let live = [0usize, 2, 3];
        for &r in &live {
            cores[r].handle(0, Event::Start);
        }
        for _ in 0..2 {
            for &r in &live {
                while let Some(t) = cores[r].poll_transmit(0) {
                    if t.to != 1 {
                        let msg = t.msg;
                        cores[t.to as usize].handle(
                            0,
                            Event::Message {
                                from: r as Rank,
                                msg,
                            },
                        );
                    }
                }
            }
        }
        for &r in &live {
            assert_eq!(cores[r].awaiting(), Some(1), "rank {r}");
            assert_eq!(cores[r].take_output(), None);
        }
    }

    #[test]
    fn members_left_out_are_neither_owners_nor_inputs() {
        // Ranks 0, 2, 3 of 4 (rank 1 agreed failed): blocks by position.
        let members = vec![0, 2, 3];
        let mut cores: Vec<Core> = members
            .iter()
            .map(|&r| members_core(r, members.clone()))
            .collect();
        for c in &mut cores {
            c.handle(0, Event::Start);
        }
        for _ in 0..2 {
            for i in 0..3 {
                while let Some(t) = cores[i].poll_transmit(0) {
                    assert_ne!(t.to, 1, "nothing to a rank left out");
                    let to = members.iter().position(|&r| r == t.to).unwrap();
                    let from = members[i];
                    cores[to].handle(0, Event::Message { from, msg: t.msg });
                }
            }
        }
        let sum = 1 + 4 + 8;
        for c in &mut cores {
            assert_eq!(
                c.take_output(),
                Some(ScatterOutput::Complete(vec![vec![sum; 2]; 3]))
            );
            assert!(c.is_finished());
        }
        let no_block = ScatterAllreduce::new(
            1,
            7,
            vec![0, 2],
            vec![vec![0u64]; 2],
            add as fn(&mut Vec<u64>, &Vec<u64>),
        );
        assert!(no_block.is_err(), "a rank that is not a member has no core");
    }

    #[test]
    fn verdicts_combine_to_the_worst_the_extreme_lengths_and_every_failure() {
        let mut v = Verdict::new(true, 80, 70, &[], &[1]);
        v.combine(&Verdict::new(true, 80, 70, &[3], &[1]));
        assert_eq!(v.decision(), Decision::Deliver);
        assert!(v.has_failed(3) && !v.has_failed(2));
        let mut other_members = v.clone();
        other_members.combine(&Verdict::new(true, 80, 70, &[], &[]));
        assert_eq!(other_members.decision(), Decision::FallBack);
        v.combine(&Verdict::new(false, 80, 70, &[65], &[1]));
        assert_eq!(v.decision(), Decision::FallBack);
        assert!(v.has_failed(3) && v.has_failed(65));
        v.combine(&Verdict::new(true, 8, 70, &[], &[1]));
        assert_eq!(Verdict::from_words(&v.to_words(), 70), Some(v.clone()));
        assert_eq!(Verdict::from_words(&v.to_words(), 200), None);
        assert_eq!(v.decision(), Decision::LengthsDiffer(8, 80));
    }
}
