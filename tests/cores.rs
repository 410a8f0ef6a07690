//! The cores tested alone, with the scripted-event harness
//! ([`corrected::protocol::script::Script`]): events in, sends and deadlines
//! out, no engine. Expectations come from the papers' rules:
//!
//! * the correction sweep of Corrected Trees Section 3.3 (opportunistic,
//!   optimized, checked, delayed) on a broadcast core;
//! * the up-correction reduce of Küttler and Härtig, Sections 4.2-4.4;
//! * the allreduce's root retry, Section 5 (and `protocol/allreduce/`).
//!
//! Ranks and inputs are picked by hand. Reduce inputs are distinct powers of
//! two combined by `+`: a value shows which inputs it includes, and an input
//! counted twice shows as a carry.

mod common;

use std::ops::Range;

use corrected::protocol::allreduce::{Allreduce, AllreduceOutput, AllreducePlan};
use corrected::protocol::bcast::{Bcast, BcastPlan, Correction};
use corrected::protocol::correction::Dissemination;
use corrected::protocol::reduce::{
    Contribution, FailureInfo, FailureScheme, Reduce, ReduceOutput, ReducePlan,
};
use corrected::protocol::script::Script;
use corrected::protocol::{Event, Header, Msg, Protocol, Tag, Transmit};
use corrected::sim::{BcastScenario, BcastSim, Engine, FaultPlan};
use corrected::topology::{Shape, Tree, TreeSpec};
use corrected::types::{Collective, LogP, Rank, Tick};
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

// ---------------------------------------------------------------------------
// Broadcast: the correction sweep (Corrected Trees, Section 3.3).
// ---------------------------------------------------------------------------

/// The value every broadcast here carries.
const VALUE: u8 = 0x5a;

const BINOMIAL: TreeSpec = TreeSpec::interleaved(Shape::Binomial);

fn bplan(spec: TreeSpec, procs: u32, correction: Correction, sync_start: Tick) -> BcastPlan {
    BcastPlan::new(
        Tree::build(spec, procs, LogP::PAPER).unwrap(),
        correction,
        sync_start,
    )
}

/// The core of `me` in a broadcast from `root` (the root gets the value),
/// started at 0.
fn bcore(plan: &BcastPlan, root: Rank, me: Rank) -> Script<Bcast<'_, u8>> {
    let mut s = Script::new(Bcast::new(plan, root, me, 0, (me == root).then_some(VALUE)).unwrap());
    s.start(0);
    s
}

/// [`bcore`] of `me`, colored by the tree: its `parent`'s tree message
/// delivered at `at`.
fn colored_by_tree(
    plan: &BcastPlan,
    root: Rank,
    me: Rank,
    at: Tick,
    parent: Rank,
) -> Script<Bcast<'_, u8>> {
    let mut s = bcore(plan, root, me);
    s.deliver(at, parent, bmsg(root, Tag::Tree));
    s
}

fn bmsg(root: Rank, tag: Tag) -> Msg<u8> {
    Msg {
        op: 0,
        kind: Collective::Broadcast,
        root,
        tag,
        payload: VALUE,
    }
}

/// Role and destination of each send.
fn dests<P>(sends: &[Transmit<Msg<P>>]) -> Vec<(Tag, Rank)> {
    sends.iter().map(|t| (t.msg.tag, t.to)).collect()
}

/// Ring neighbours, written out (not the crate's `ring`): `dist` to the left
/// (lower ranks) or right of `r` on a ring of `p`.
fn left(r: Rank, dist: u32, p: u32) -> Rank {
    (r + p - dist % p) % p
}
fn right(r: Rank, dist: u32, p: u32) -> Rank {
    (r + dist) % p
}

/// The interleaved binomial tree, Corrected Trees Section 3.2.2: `r` sends
/// to `r + 2^i` for every `i` with `2^i > r` and `r + 2^i < P`, in the
/// order of `i`.
fn binomial_children(r: Rank, p: u32) -> Vec<Rank> {
    (0..32)
        .map(|i| 1u64 << i)
        .filter(|&c| c > r as u64 && r as u64 + c < p as u64)
        .map(|c| r + c as Rank)
        .collect()
}

fn tree_sends(children: &[Rank]) -> Vec<(Tag, Rank)> {
    children.iter().map(|&c| (Tag::Tree, c)).collect()
}

/// An opportunistic sweep of `d` each way from `me`: left first, then
/// alternating, nearest first.
fn alternating(me: Rank, d: u32, p: u32) -> Vec<(Tag, Rank)> {
    (1..=d)
        .flat_map(|i| {
            [
                (Tag::Leftward, left(me, i, p)),
                (Tag::Rightward, right(me, i, p)),
            ]
        })
        .collect()
}

/// Opportunistic correction d: a rank colored by the tree sends to its tree
/// children, then exactly d correction messages each way, left first and
/// alternating, and then nothing more whatever it hears.
#[test]
fn opportunistic_sends_tree_children_then_d_each_way() {
    const P: u32 = 16;
    assert_eq!(binomial_children(1, P), [3, 5, 9]);
    for d in [1, 3, 7] {
        let plan = bplan(BINOMIAL, P, Correction::Opportunistic { distance: d }, 0);
        let mut s = bcore(&plan, 0, 1);
        assert_eq!(s.sends(0), [], "uncolored: silent");
        s.deliver(4, 0, bmsg(0, Tag::Tree));
        assert_eq!(s.output(), Some(VALUE));
        let mut want = tree_sends(&binomial_children(1, P));
        want.extend(alternating(1, d, P));
        assert_eq!(dests(&s.sends(4)), want, "d={d}");
        assert_eq!(s.deadline(), None);
        assert!(s.core().is_quiescent());
        // Hearing from either side changes nothing any more.
        s.deliver(9, 2, bmsg(0, Tag::Leftward));
        s.deliver(9, 0, bmsg(0, Tag::Rightward));
        assert_eq!(s.sends(9), [], "d={d}");
        assert_eq!(s.output(), None, "delivered once");
    }
}

/// Checked correction: each side goes on until the rank has sent to the
/// nearest correction sender it heard from on that side. Here rank 5 of 16
/// has sent one message each way when it hears from 7 (distance 2 on its
/// right) and from 3 (distance 2 on its left): it sends to 3 and to 7,
/// and stops on both sides.
#[test]
fn checked_stops_each_side_at_the_nearest_sender_heard() {
    const P: u32 = 16;
    let plan = bplan(BINOMIAL, P, Correction::Checked, 0);
    let mut s = colored_by_tree(&plan, 0, 5, 4, 1);
    assert_eq!(binomial_children(5, P), [13]);
    let first: Vec<_> = (0..3).map(|_| s.send(4).unwrap()).collect();
    assert_eq!(
        dests(&first),
        [(Tag::Tree, 13), (Tag::Leftward, 4), (Tag::Rightward, 6)]
    );
    // 7's leftward sweep reaches 5 (distance 2); 3's rightward sweep too.
    s.deliver(5, 7, bmsg(0, Tag::Leftward));
    s.deliver(5, 3, bmsg(0, Tag::Rightward));
    assert_eq!(
        dests(&s.sends(5)),
        [(Tag::Leftward, 3), (Tag::Rightward, 7)]
    );
    assert!(s.core().is_quiescent());
    assert!(s.core().is_finished());
}

/// Checked correction without news from either side: the sweep covers the
/// whole ring and no more, every other rank exactly once (P - 1 messages),
/// left first and alternating, the left side taking the odd one.
#[test]
fn checked_without_news_covers_the_ring_once() {
    const P: u32 = 16;
    for correction in [Correction::Checked, Correction::CheckedSync] {
        let plan = bplan(BINOMIAL, P, correction, 6);
        let mut s = colored_by_tree(&plan, 0, 5, 4, 1);
        let mut want = tree_sends(&[13]);
        if correction.synchronized() {
            // Synchronized: the sweep waits for the common start.
            assert_eq!(dests(&s.sends(4)), want);
            assert_eq!(s.deadline(), Some(6));
            s.fire(6);
            want.clear();
        }
        want.extend(alternating(5, 7, P));
        want.push((Tag::Leftward, left(5, 8, P)));
        let now = s.now();
        assert_eq!(dests(&s.sends(now)), want, "{correction}");
        assert!(s.core().is_quiescent());
    }
}

/// The ring and the tree are built for root 0 and rotated: with root 3,
/// rank 8 is virtual rank 5, whose tree child 13 is rank 0; ring
/// distances are the same in either numbering.
#[test]
fn checked_rotates_around_the_root() {
    const P: u32 = 16;
    let plan = bplan(BINOMIAL, P, Correction::Checked, 0);
    let mut s = colored_by_tree(&plan, 3, 8, 4, 4);
    s.deliver(4, 10, bmsg(3, Tag::Leftward));
    s.deliver(4, 6, bmsg(3, Tag::Rightward));
    // A message of another root's broadcast is not this operation's.
    s.deliver(4, 9, bmsg(0, Tag::Leftward));
    assert_eq!(
        dests(&s.sends(4)),
        [
            (Tag::Tree, 0),
            (Tag::Leftward, 7),
            (Tag::Rightward, 9),
            (Tag::Leftward, 6),
            (Tag::Rightward, 10),
        ]
    );
    assert!(s.core().is_quiescent());
}

/// Optimized opportunistic correction, the paper's own example (Section
/// 3.3): with d = 8, process 19 hears from 23, which surely sends to
/// 22..15, so 19 sends left only to 14..11; to the right it sends its d as
/// usual. Mirrored: hearing from 17 on its left (distance 2), whose sweep
/// covers 18..25, 19 sends right only to 26 and 27.
#[test]
fn optimized_skips_what_a_neighbour_covers() {
    const P: u32 = 32;
    let d = 8;
    let plan = bplan(BINOMIAL, P, Correction::Optimized { distance: d }, 0);
    assert_eq!(binomial_children(19, P), [], "19 is a leaf");
    let split = |sends: &[Transmit<Msg<u8>>], tag: Tag| -> Vec<Rank> {
        sends
            .iter()
            .filter(|t| t.msg.tag == tag)
            .map(|t| t.to)
            .collect()
    };

    let mut s = colored_by_tree(&plan, 0, 19, 6, 3);
    s.deliver(6, 23, bmsg(0, Tag::Leftward));
    let sends = s.sends(6);
    assert_eq!(split(&sends, Tag::Leftward), [14, 13, 12, 11]);
    assert_eq!(split(&sends, Tag::Rightward), (20..=27).collect::<Vec<_>>());
    assert_eq!(sends.len(), 12);

    let mut s = colored_by_tree(&plan, 0, 19, 6, 3);
    s.deliver(6, 23, bmsg(0, Tag::Leftward));
    s.deliver(6, 17, bmsg(0, Tag::Rightward));
    let sends = s.sends(6);
    assert_eq!(split(&sends, Tag::Leftward), [14, 13, 12, 11]);
    assert_eq!(split(&sends, Tag::Rightward), [26, 27]);
    assert!(s.core().is_quiescent());

    // A sender d or more away covers none of this rank's neighbours.
    let mut s = colored_by_tree(&plan, 0, 19, 6, 3);
    s.deliver(6, 27, bmsg(0, Tag::Leftward));
    assert_eq!(dests(&s.sends(6)), alternating(19, d, P));
}

/// Ranks colored by a correction message send no correction (Corrected
/// Trees Section 3.1): only ranks colored by dissemination correct. The
/// crate's two extensions differ on purpose: relaying sweeps d each way
/// too, forwarding sends on to its tree children instead.
#[test]
fn a_rank_colored_by_correction_sends_no_correction_unless_relaying() {
    const P: u32 = 16;
    let kary4 = TreeSpec::interleaved(Shape::KAry(4));
    // Interleaved 4-ary tree (Section 3.2.1, with i = 1..=k as
    // docs/algorithms.md reads it): rank 2 on level 1 has the children
    // 2 + i·4 below P.
    let kary_children = [6, 10, 14];
    for correction in [
        Correction::Opportunistic { distance: 2 },
        Correction::Optimized { distance: 2 },
        Correction::Checked,
        Correction::CheckedSync,
        Correction::Delayed { delay: 5 },
        Correction::Relaying { distance: 2 },
        Correction::Forwarding { distance: 2 },
    ] {
        for spec in [BINOMIAL, kary4] {
            let plan = bplan(spec, P, correction, 10);
            let mut s = bcore(&plan, 0, 2);
            s.deliver(3, 1, bmsg(0, Tag::Rightward));
            s.deliver(4, 4, bmsg(0, Tag::Leftward));
            assert_eq!(s.output(), Some(VALUE));
            let want = match correction {
                // Heard from 1 and 4: relaying is opportunistic, it sends
                // its d anyway.
                Correction::Relaying { distance } => alternating(2, distance, P),
                Correction::Forwarding { .. } if spec == kary4 => tree_sends(&kary_children),
                Correction::Forwarding { .. } => tree_sends(&binomial_children(2, P)),
                _ => vec![],
            };
            // Past any synchronized start: still nothing.
            assert_eq!(dests(&s.sends(20)), want, "{correction} on {spec}");
            assert_eq!(s.deadline(), None, "{correction} on {spec}");
            assert!(!s.core().colored_by_tree());
        }
    }
}

/// Overlapped correction: a rank reached by an early correction message
/// still sends its tree messages when the tree message comes (Section
/// 3.3), and from then on corrects as a rank colored by the tree; it
/// delivers once.
#[test]
fn an_early_correction_message_then_the_tree_message() {
    const P: u32 = 16;
    let plan = bplan(BINOMIAL, P, Correction::Opportunistic { distance: 2 }, 0);
    let mut s = bcore(&plan, 0, 5);
    s.deliver(2, 6, bmsg(0, Tag::Leftward));
    assert_eq!(s.output(), Some(VALUE));
    assert_eq!(s.sends(2), []);
    s.deliver(4, 1, bmsg(0, Tag::Tree));
    assert_eq!(s.output(), None);
    let mut want = tree_sends(&[13]);
    want.extend(alternating(5, 2, P));
    assert_eq!(dests(&s.sends(4)), want);
}

/// Delayed correction on 16 ranks, synchronized at T = 20 with a delay of
/// 5: the plan, T and the delay.
fn delayed() -> (BcastPlan, Tick, Tick) {
    let (t, delay) = (20, 5);
    let plan = bplan(BINOMIAL, 16, Correction::Delayed { delay }, t);
    (plan, t, delay)
}

/// Delayed correction (Section 3.3), synchronized at T: at T one message to
/// the left, then a deadline at T + delay; if nothing came from the right
/// by then, a sweep to the right, one rank after the other, until
/// something comes from the right.
#[test]
fn delayed_one_left_then_a_deadline_then_right_until_heard() {
    let (plan, t, delay) = delayed();
    let mut s = colored_by_tree(&plan, 0, 5, 3, 1);
    assert_eq!(dests(&s.sends(3)), tree_sends(&[13]));
    assert_eq!(s.deadline(), Some(t), "waits for the synchronized start");
    s.fire(t);
    assert_eq!(dests(&s.sends(t)), [(Tag::Leftward, 4)]);
    assert_eq!(s.deadline(), Some(t + delay));
    assert_eq!(s.sends(t + delay - 1), [], "not before the delay");
    s.fire(t + delay);
    assert_eq!(step(&mut s, t + delay), Some((Tag::Rightward, 6)));
    assert_eq!(s.deadline(), None, "sweeping: no more deadline");
    assert_eq!(step(&mut s, t + delay + 1), Some((Tag::Rightward, 7)));
    // A message from the left does not stop the sweep (it is answered).
    s.deliver(t + delay + 2, 3, bmsg(0, Tag::Rightward));
    assert_eq!(step(&mut s, t + delay + 2), Some((Tag::Stop, 3)));
    assert_eq!(step(&mut s, t + delay + 2), Some((Tag::Rightward, 8)));
    // 7, colored by the tree, replies: the sweep stops.
    s.deliver(t + delay + 3, 7, bmsg(0, Tag::Stop));
    assert_eq!(s.sends(t + delay + 3), []);
    assert_eq!(s.deadline(), None);
    assert!(s.core().is_quiescent());
}

/// [`colored_by_tree`] of `me` under delayed correction synchronized at
/// `t`, its `parent`'s tree message at 3: it sends to its tree children,
/// then at `t` one message to the left.
fn sent_left(plan: &BcastPlan, t: Tick, me: Rank, parent: Rank) -> Script<Bcast<'_, u8>> {
    let mut s = colored_by_tree(plan, 0, me, 3, parent);
    let children = binomial_children(me, plan.procs());
    assert_eq!(dests(&s.sends(3)), tree_sends(&children));
    s.fire(t);
    assert_eq!(dests(&s.sends(t)), [(Tag::Leftward, me - 1)]);
    s
}

/// One poll: role and destination.
fn step(s: &mut Script<Bcast<'_, u8>>, now: Tick) -> Option<(Tag, Rank)> {
    s.send(now).map(|tx| (tx.msg.tag, tx.to))
}

/// Delayed correction: a message from the right before the deadline means
/// no sweep right at all; fault-free that is one message per process.
#[test]
fn delayed_heard_from_the_right_in_time_sends_one_message() {
    let (plan, t, delay) = delayed();
    let mut s = sent_left(&plan, t, 5, 1);
    s.deliver(t + 4, 6, bmsg(0, Tag::Leftward));
    assert_eq!(s.deadline(), None);
    assert_eq!(s.sends(t + delay), []);
    assert_eq!(s.sends(t + 10 * delay), []);
    assert!(s.core().is_quiescent());
}

/// Delayed correction: a rank colored by the tree that hears from its left
/// replies `Stop` to the sender at once (each sender once); a rank colored
/// by correction does not, and sends nothing at all.
#[test]
fn delayed_tree_colored_rank_replies_stop_and_others_stay_silent() {
    let (plan, t, delay) = delayed();

    let mut tree_colored = sent_left(&plan, t, 5, 1);
    tree_colored.deliver(t + 1, 6, bmsg(0, Tag::Leftward));
    for (at, from) in [(t + delay + 4, 3), (t + delay + 6, 1)] {
        tree_colored.deliver(at, from, bmsg(0, Tag::Rightward));
        assert_eq!(dests(&tree_colored.sends(at)), [(Tag::Stop, from)]);
    }
    assert!(tree_colored.core().is_quiescent());

    let mut by_correction = bcore(&plan, 0, 6);
    by_correction.deliver(t + delay + 4, 3, bmsg(0, Tag::Rightward));
    assert_eq!(by_correction.output(), Some(VALUE));
    assert_eq!(by_correction.sends(t + delay + 4), []);
    assert_eq!(by_correction.deadline(), None);
    by_correction.deliver(t + delay + 5, 4, bmsg(0, Tag::Rightward));
    assert_eq!(by_correction.sends(t + 100), []);
}

/// # Why a third stop reply may be dropped
///
/// A [`Bcast`] core under delayed correction keeps at most two pending
/// `Stop` replies (`REPLIES = 2` in `protocol/correction.rs`); a
/// `Rightward` message that arrives while two are pending gets none. The
/// paper's rule says to reply to every one ("immediately replies to stop
/// the sender"), so this is a deviation. It is safe.
///
/// **When replies pile up.** Only ranks colored by the tree correct: one
/// message left at the synchronized start T, then, if nothing came from
/// the right by T + delay, one message right per send until something does
/// (a `Leftward` or a `Stop`). A tree-colored rank X that hears a
/// `Rightward` from a sender S on its left queues a `Stop` for S, and
/// queued replies go out before any other correction message. Replies wait
/// only while X cannot send. In the LogP model at most one waits at a time:
/// right sweeps begin at T + delay, when every tree-colored rank has done
/// its tree sends and opened its correction; X finishes at most one receive
/// per o, each reply occupies its send port for o, and a reply goes before
/// X's own sweep, so a reply that came in while the port was busy leaves
/// when it frees, before the next receive ends. The second slot is slack.
/// A third needs X to take in three `Rightward` messages before it sends
/// again: an engine that drains a mailbox before it polls (threads), a
/// descheduled rank, a pace longer than the time between arrivals, or a
/// rank that still owes tree sends. Three senders do happen: with tree-
/// colored A, B, C, X and one dead rank after each of A, B and C, each of
/// A, B and C loses the left message meant for it and sweeps right, and a
/// sweep runs on for the round trip of its stop ((4o + 2L)/o - 1 sends
/// past the rank that stops it, 7 with L = 2 and o = 1), so all three
/// reach X.
///
/// **Why dropping is safe.**
/// 1. *Coloring:* a `Stop` goes to a rank that has the value (it sent it).
///    No rank's delivery depends on a `Stop`.
/// 2. *Termination:* an unanswered sweep still ends: at the first message
///    from its right, and at the latest when it has covered the ring
///    (left + right = P - 1). The extra messages go to ranks that have the
///    value or get it from them, and a core delivers once.
/// 3. *Usually at no cost:* a sweep goes outward one rank at a time, so a
///    sender S farther from X than another sender S' (S < S' < X) sent to
///    S' before it sent to X; S' is colored by the tree (only such ranks
///    sweep) and, if it already was when that message came (always so in
///    LogP, where the tree is done by T), queued a `Stop` for S, from
///    nearer and earlier than X.
///    With synchronized starts and equal hop costs the sender at distance δ
///    reaches X with its δ-th right send: arrivals come nearest first, and
///    the reply dropped is the farthest sender's, which a nearer colored
///    rank stops. Only when delays invert that order is a nearest sender
///    dropped; its sweep then runs past X to the next colored rank, which
///    stops it (point 2).
///
/// This test shows the drop on the core alone; the two below show the
/// configuration in the simulator, with X held back so that the drop
/// happens, and a random-schedule sweep.
#[test]
fn a_third_pending_stop_reply_is_dropped() {
    let (plan, t, delay) = delayed();
    // Three senders at distances 2, 4 and 6, handed in before X sends again.
    let mut batched = ready_x(&plan, t);
    for (i, from) in [12, 10, 8].into_iter().enumerate() {
        batched.deliver(t + delay + 5 + 2 * i as Tick, from, bmsg(0, Tag::Rightward));
    }
    assert_eq!(
        dests(&batched.sends(t + delay + 10)),
        [(Tag::Stop, 12), (Tag::Stop, 10)],
        "the third reply is dropped"
    );
    assert!(batched.core().is_quiescent());
    // Polled between arrivals, as in LogP, each gets its reply.
    let mut polled = ready_x(&plan, t);
    for (i, from) in [12, 10, 8].into_iter().enumerate() {
        let at = t + delay + 5 + 2 * i as Tick;
        polled.deliver(at, from, bmsg(0, Tag::Rightward));
        assert_eq!(dests(&polled.sends(at)), [(Tag::Stop, from)]);
    }
}

/// X = 14 of 16 (delayed correction, synchronized at `t`), colored by the
/// tree, after its left message and after hearing from 15 on its right.
fn ready_x(plan: &BcastPlan, t: Tick) -> Script<Bcast<'_, u8>> {
    let mut s = sent_left(plan, t, 14, 6);
    s.deliver(t + 4, 15, bmsg(0, Tag::Leftward));
    s
}

/// A broadcast core a scheduler holds back: during `stall` it takes in
/// every event but sends nothing (a descheduled thread whose mailbox fills
/// up), then catches up. Records what it hears and sends.
#[derive(Debug)]
struct Held<'p> {
    core: Bcast<'p, u8>,
    stall: Range<Tick>,
    now: Tick,
    /// (when, from, tag, colored by the tree when it came).
    heard: Vec<(Tick, Rank, Tag, bool)>,
    /// (when, to, tag).
    sent: Vec<(Tick, Rank, Tag)>,
}

impl<'p> Held<'p> {
    fn new(core: Bcast<'p, u8>, stall: Range<Tick>) -> Self {
        Held {
            core,
            stall,
            now: 0,
            heard: Vec::new(),
            sent: Vec::new(),
        }
    }

    fn stops_to(&self, to: Rank) -> usize {
        self.sent
            .iter()
            .filter(|&&(_, r, tag)| r == to && tag == Tag::Stop)
            .count()
    }

    /// The senders of the `Rightward` messages it heard while held back, in
    /// the order they came.
    fn rightward_while_held(&self) -> Vec<Rank> {
        self.heard
            .iter()
            .filter(|h| h.2 == Tag::Rightward && self.stall.contains(&h.0))
            .map(|h| h.1)
            .collect()
    }

    /// Senders of `Rightward` messages that came while this rank was
    /// colored by the tree and never got a `Stop`: dropped replies.
    fn dropped(&self) -> Vec<Rank> {
        self.heard
            .iter()
            .filter(|&&(_, from, tag, by_tree)| {
                tag == Tag::Rightward && by_tree && self.stops_to(from) == 0
            })
            .map(|&(_, from, _, _)| from)
            .collect()
    }
}

impl Protocol for Held<'_> {
    type Payload = u8;
    type Output = u8;

    fn handle(&mut self, now: Tick, event: Event<Msg<u8>>) {
        self.now = now;
        match event {
            Event::Message { from, msg } => {
                self.heard
                    .push((now, from, msg.tag, self.core.colored_by_dissemination()));
            }
            // The wake-up at the end of the stall is not the core's timer.
            Event::Timer if self.core.poll_deadline().map_or(true, |at| at > now) => return,
            _ => {}
        }
        self.core.handle(now, event);
    }

    fn poll_transmit(&mut self, now: Tick) -> Option<Transmit<Msg<u8>>> {
        self.now = now;
        if self.stall.contains(&now) {
            return None;
        }
        let tx = self.core.poll_transmit(now)?;
        self.sent.push((now, tx.to, tx.msg.tag));
        Some(tx)
    }

    fn poll_deadline(&self) -> Option<Tick> {
        if self.stall.contains(&self.now) {
            Some(self.stall.end)
        } else {
            self.core.poll_deadline()
        }
    }

    fn take_output(&mut self) -> Option<u8> {
        self.core.take_output()
    }

    fn is_quiescent(&self) -> bool {
        self.core.is_quiescent()
    }

    fn header(&self) -> Header {
        self.core.header()
    }

    fn is_finished(&self) -> bool {
        self.core.is_finished()
    }
}

/// Runs a delayed-correction broadcast from root 0 in the LogP simulator
/// with ranks `dead` dead from the start and rank `r` held back during
/// `stalls[r]`. Checks what the delayed correction guarantees: every live
/// rank delivers the root's value once, and every core falls quiescent.
fn run_held<'p>(
    plan: &'p BcastPlan,
    dead: &[Rank],
    stalls: &[(Rank, Range<Tick>)],
) -> Vec<Held<'p>> {
    let procs = plan.procs();
    let mut cores: Vec<Held<'p>> = (0..procs)
        .map(|r| {
            let stall = stalls
                .iter()
                .find(|(s, _)| *s == r)
                .map_or(0..0, |(_, w)| w.clone());
            let core = Bcast::new(plan, 0, r, 0, (r == 0).then_some(VALUE)).unwrap();
            Held::new(core, stall)
        })
        .collect();
    let death = common::dead_from_start(procs, dead);
    let trace = Engine::new(LogP::PAPER).run(&mut cores, &death);
    let context = format!("dead {dead:?}, stalls {stalls:?}");
    for r in (0..procs).filter(|r| !dead.contains(r)) {
        assert_eq!(
            trace.outputs[r as usize].map(|(_, v)| v),
            Some(VALUE),
            "rank {r} delivers; {context}"
        );
    }
    assert_eq!(trace.duplicates, 0, "{context}");
    assert_eq!(trace.unquiescent, 0, "{context}");
    cores
}

/// The configuration of the note above in the LogP simulator: 16 ranks,
/// binomial tree, delayed correction, dead 9, 11 and 13 (leaves), so the
/// tree colors 8, 10, 12 and 14 and each of 8, 10 and 12 sweeps right.
/// X = 14 is held back while their messages come: it answers 12 and 10,
/// drops 8's reply, and 8 is stopped by 10, the nearer colored rank, no
/// later than without the drop. Then 12 is held back as well, so its
/// message reaches X last: X drops the nearest sender's reply, and 12's
/// sweep runs past X to 15, colored by the tree, which stops it. Every
/// live rank delivers once and every core falls quiescent throughout.
#[test]
fn dropping_the_third_stop_reply_is_safe() {
    const P: u32 = 16;
    let delay = 5;
    let plan =
        BcastPlan::for_logp(BINOMIAL, P, Correction::Delayed { delay }, LogP::PAPER).unwrap();
    let t = plan.sync_start();
    let dead = [9, 11, 13];
    let x: Rank = 14;

    // Unheld, the simulator's own broadcast experiment agrees: no violation.
    let sc = BcastScenario::new(
        BINOMIAL,
        P,
        Correction::Delayed { delay },
        LogP::PAPER,
        FaultPlan::dead(dead),
    )
    .unwrap();
    let run = BcastSim::new(&sc).run_with(&common::dead_from_start(P, &dead));
    assert_eq!((run.violations, run.uncolored_live), (0, 0));
    let free = run_held(&plan, &dead, &[]);
    for r in [8, 10, 12] {
        assert!(free[x as usize].stops_to(r) == 1, "unheld, X answers {r}");
    }

    // X held back from just after its left message until well after the sweeps.
    let held = run_held(&plan, &dead, &[(x, t + 1..t + delay + 30)]);
    let xs = &held[x as usize];
    let senders = xs.rightward_while_held();
    assert_eq!(
        senders,
        [12, 10, 8],
        "three senders, nearest first, while held"
    );
    assert_eq!(xs.dropped(), [8]);
    assert_eq!((xs.stops_to(12), xs.stops_to(10)), (1, 1));
    // 8 heard a Stop from 10, nearer than X, and sent nothing after it.
    let eight = &held[8];
    let first_stop = eight
        .heard
        .iter()
        .find(|h| h.2 == Tag::Stop)
        .expect("8 is stopped");
    assert_eq!(first_stop.1, 10);
    assert!(eight.sent.iter().all(|s| s.0 < first_stop.0));
    assert_eq!(eight.sent, free[8].sent, "the drop cost 8 nothing");

    // 12 held back too, past its deadline: its message reaches X last.
    let held = run_held(
        &plan,
        &dead,
        &[(x, t + 1..t + delay + 30), (12, t + 1..t + delay + 8)],
    );
    let xs = &held[x as usize];
    let senders = xs.rightward_while_held();
    assert_eq!(senders.len(), 3, "{senders:?}");
    assert_eq!(senders[2], 12, "the nearest comes last: {senders:?}");
    assert_eq!(xs.dropped(), [12]);
    let twelve = &held[12];
    let first_stop = twelve
        .heard
        .iter()
        .find(|h| h.2 == Tag::Stop || h.2 == Tag::Leftward)
        .expect("12 is stopped");
    assert_eq!(
        (first_stop.1, first_stop.2),
        (15, Tag::Stop),
        "stopped by the next colored rank past X"
    );
    assert!(twelve
        .sent
        .iter()
        .filter(|s| s.2 == Tag::Rightward)
        .all(|s| s.0 < first_stop.0));
}

/// Random dead sets and random hold-backs of random ranks on 32 ranks,
/// delayed correction: replies get dropped (the test makes sure of it), and
/// still every live rank delivers once and every core falls quiescent.
#[test]
fn dropped_stop_replies_never_cost_delivery_or_termination() {
    const P: u32 = 32;
    let delay = 5;
    let mut drops = 0;
    for spec in [BINOMIAL, TreeSpec::interleaved(Shape::KAry(2))] {
        let plan =
            BcastPlan::for_logp(spec, P, Correction::Delayed { delay }, LogP::PAPER).unwrap();
        let t = plan.sync_start();
        for seed in 0..300 {
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let dead: Vec<Rank> = (1..P).filter(|_| rng.gen_bool(0.3)).collect();
            let mut stalls: Vec<(Rank, Range<Tick>)> = Vec::new();
            for r in (0..P).filter(|r| !dead.contains(r)) {
                if rng.gen_bool(0.4) {
                    let from = rng.gen_range(0..t + 2 * delay);
                    stalls.push((r, from..from + rng.gen_range(1..40)));
                }
            }
            let cores = run_held(&plan, &dead, &stalls);
            drops += cores.iter().map(|c| c.dropped().len()).sum::<usize>();
        }
    }
    assert!(drops > 0, "no reply was dropped: the test shows nothing");
}

// ---------------------------------------------------------------------------
// Reduce: up-correction and the tree phase (Küttler, Härtig, Sections 4.2-4.4).
// ---------------------------------------------------------------------------

type Add = fn(&mut u64, &u64);

fn add(acc: &mut u64, x: &u64) {
    *acc += *x;
}

/// Rank r's input: a bit of its own.
fn input(r: Rank) -> u64 {
    1 << r
}

/// The sum of the inputs of `ranks`.
fn sum(ranks: impl IntoIterator<Item = Rank>) -> u64 {
    ranks.into_iter().map(input).sum()
}

fn rplan(procs: u32, f: u32) -> ReducePlan {
    ReducePlan::new(BINOMIAL, procs, f, FailureScheme::List, LogP::PAPER).unwrap()
}

/// The reduce core of `me` (root 0), started at 0.
fn rcore(plan: &ReducePlan, me: Rank) -> Script<Reduce<'_, u64, Add>> {
    let input = Contribution::input(input(me));
    let core = Reduce::new(plan, 0, me, 0, Collective::Reduce, input, add as Add).unwrap();
    let mut s = Script::new(core);
    s.start(0);
    s
}

fn rmsg(root: Rank, kind: Collective, tag: Tag, c: Contribution<u64>) -> Msg<Contribution<u64>> {
    Msg {
        op: 0,
        kind,
        root,
        tag,
        payload: c,
    }
}

fn up(value: u64) -> Msg<Contribution<u64>> {
    rmsg(
        0,
        Collective::Reduce,
        Tag::UpCorrection,
        Contribution::input(value),
    )
}

fn partial(value: u64, info: FailureInfo) -> Msg<Contribution<u64>> {
    rmsg(
        0,
        Collective::Reduce,
        Tag::Upward,
        Contribution {
            value,
            info,
            decided: false,
        },
    )
}

/// The partial result `value` of a subtree that reports no failure.
fn complete(value: u64) -> Msg<Contribution<u64>> {
    partial(value, FailureInfo::default())
}

/// The value the root delivered, if it did.
fn root_value(out: Option<ReduceOutput<u64>>) -> Option<u64> {
    match out {
        Some(ReduceOutput::Root { value, .. }) => Some(value),
        _ => None,
    }
}

/// The up-corrections of an input to `peers`, in turn.
fn up_corrections(peers: &[Rank]) -> Vec<(Tag, Rank)> {
    peers.iter().map(|&p| (Tag::UpCorrection, p)).collect()
}

/// Failure information as the list scheme builds it: `(rank, in the tree)`.
fn failures(noted: &[(Rank, bool)]) -> FailureInfo {
    let mut info = FailureInfo::default();
    for &(r, in_tree) in noted {
        info.note_failed(r, in_tree, FailureScheme::List);
    }
    info
}

/// A non-root (Algorithm 3): up-correction first, its input to every other
/// member of its group (Algorithm 1); then it waits for each child's
/// partial result, and sends one message to its parent: its input, its
/// group's inputs and its children's results, with their failure
/// information. P = 7, f = 2: groups {1, 2, 3}, {4, 5, 6}; the root's
/// children are 1, 2, 3, and subtree k holds k and k + 3. Rank 2 has peers
/// 1 and 3, child 5, parent 0.
#[test]
fn reduce_non_root_up_corrects_then_waits_for_its_children() {
    let plan = rplan(7, 2);
    let mut s = rcore(&plan, 2);
    let sends = s.sends(0);
    assert_eq!(dests(&sends), up_corrections(&[1, 3]));
    for tx in &sends {
        assert_eq!(tx.msg.payload, Contribution::input(input(2)));
        assert_eq!((tx.msg.kind, tx.msg.root), (Collective::Reduce, 0));
    }
    assert_eq!(s.core().awaiting(), Some(1), "the first peer");
    s.deliver(1, 3, up(input(3)));
    assert_eq!(s.core().awaiting(), Some(1));
    assert_eq!(s.sends(1), []);
    s.deliver(2, 1, up(input(1)));
    assert_eq!(s.core().awaiting(), Some(5), "then the child");
    assert_eq!(s.sends(2), []);
    assert!(s.core().is_quiescent());
    // 5's partial result: 5 up-corrected with 4 and 6.
    s.deliver(3, 5, complete(sum([4, 5, 6])));
    let sends = s.sends(3);
    assert_eq!(dests(&sends), [(Tag::Upward, 0)]);
    assert_eq!(
        sends[0].msg.payload,
        Contribution::input(sum([1, 2, 3, 4, 5, 6]))
    );
    assert_eq!(s.output(), Some(ReduceOutput::Sent));
    assert_eq!(s.core().awaiting(), None);
    assert_eq!(s.sends(4), [], "one message up");
}

/// A child that fails (reported by [`Event::PeerFailed`]) marks the
/// subtree incomplete (the bit of Section 4.4); a group peer that fails
/// does not, it is only listed. The paper's Figure 2 (P = 7, f = 1): rank
/// 2 with peer 1, children 4 and 6.
#[test]
fn reduce_failed_child_sets_subtree_failed_and_a_failed_peer_does_not() {
    let plan = rplan(7, 1);
    let mut s = rcore(&plan, 2);
    assert_eq!(dests(&s.sends(0)), [(Tag::UpCorrection, 1)]);
    s.fail(1, 1);
    assert_eq!(s.core().awaiting(), Some(4));
    s.fail(2, 4);
    assert_eq!(s.core().awaiting(), Some(6));
    // 6's partial result: its peer 5 failed too, so 6 alone.
    s.deliver(3, 6, partial(input(6), failures(&[(5, false)])));
    let sends = s.sends(3);
    assert_eq!(dests(&sends), [(Tag::Upward, 0)]);
    let got = sends[0].msg.payload;
    assert_eq!(got.value, sum([2, 6]));
    assert!(got.info.subtree_failed);
    assert_eq!(got.info.count, 3);
    let mut listed = got.info.ranks().to_vec();
    listed.sort_unstable();
    assert_eq!(listed, [1, 4, 5]);

    // The peer alone failing leaves the bit clear.
    let mut s = rcore(&plan, 2);
    s.sends(0);
    s.fail(1, 1);
    s.deliver(2, 4, complete(sum([3, 4])));
    s.deliver(2, 6, complete(sum([5, 6])));
    let got = s.sends(2)[0].msg.payload;
    assert_eq!(got.value, sum([2, 3, 4, 5, 6]));
    assert!(!got.info.subtree_failed);
    assert_eq!(got.info.ranks(), [1]);
}

/// The root (Algorithm 2) takes the first partial result whose subtree
/// reports no failure, without waiting for the others, and adds its own
/// up-corrected value when that subtree holds no member of its group.
/// P = 7, f = 1: the root is in no group, so it always adds its input.
#[test]
fn reduce_root_takes_the_first_complete_subtree() {
    let plan = rplan(7, 1);
    let mut s = rcore(&plan, 0);
    assert_eq!(s.sends(0), [], "in no group: no up-correction");
    assert_eq!(s.core().awaiting(), Some(1));
    // The paper's Figure 2: 1 died, subtree 1 is incomplete; 2, 1's group
    // peer, noticed it too, and 3 and 5 got in through 4 and 6.
    s.fail(1, 1);
    assert_eq!(s.output(), None);
    s.deliver(2, 2, partial(sum([2, 3, 4, 5, 6]), failures(&[(1, false)])));
    match s.output() {
        Some(ReduceOutput::Root {
            value,
            decided,
            info,
        }) => {
            assert_eq!(value, sum([0, 2, 3, 4, 5, 6]));
            assert!(!decided);
            assert!(!info.subtree_failed);
            // How often it lists 1: see reduce_root_counts_a_failed_root_child_once.
            assert!(info.ranks().contains(&1));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.sends(2), []);

    // The first complete answer wins even with another one still pending.
    let mut s = rcore(&plan, 0);
    s.deliver(1, 2, complete(sum(1..7)));
    assert_eq!(root_value(s.output()), Some(sum(0..7)));
}

/// P = 8, f = 2: groups {1, 2, 3}, {4, 5, 6} and the short last group {7}
/// that the root joins. Subtree 1 = {1, 4, 7} holds 7, whose up-corrected
/// value includes the root's input: the root takes subtree 1's result as
/// it is. Subtrees 2 = {2, 5} and 3 = {3, 6} lack 7 and the root: the root
/// adds its own up-corrected value (its input and 7's), once it has it.
#[test]
fn reduce_root_in_a_group_completes_subtrees_without_a_member() {
    let plan = rplan(8, 2);
    let all = sum(0..8);

    let mut s = rcore(&plan, 0);
    assert_eq!(dests(&s.sends(0)), [(Tag::UpCorrection, 7)]);
    assert_eq!(s.core().awaiting(), Some(7));
    s.deliver(1, 1, complete(all));
    assert_eq!(
        root_value(s.output()),
        Some(all),
        "subtree 1 already holds the root's input: taken as is"
    );

    let mut s = rcore(&plan, 0);
    s.sends(0);
    s.deliver(1, 2, complete(sum(1..7)));
    assert_eq!(s.output(), None, "needs 7's input first");
    assert_eq!(s.core().awaiting(), Some(7));
    s.deliver(2, 7, up(input(7)));
    assert_eq!(root_value(s.output()), Some(all));

    // 7 failed: subtree 3's result plus the root's own input, without 7's.
    let mut s = rcore(&plan, 0);
    s.sends(0);
    s.fail(1, 7);
    s.deliver(2, 3, complete(sum(1..7)));
    assert_eq!(root_value(s.output()), Some(sum(0..7)));
}

/// With no subtree complete (more than f failures) the root says so
/// instead of returning a partial result.
#[test]
fn reduce_root_with_no_complete_subtree_reports_too_many_failures() {
    let plan = rplan(7, 1);
    let mut s = rcore(&plan, 0);
    // 2, 4 and 5 died. Subtree 1 = {1, 3, 5}: 1 lost its peer 2 and its
    // child 5, 3 lost its peer 4.
    let below = failures(&[(2, false), (4, false), (5, true)]);
    s.deliver(1, 1, partial(sum([1, 3]), below));
    assert_eq!(s.output(), None);
    s.fail(2, 2);
    match s.output() {
        Some(ReduceOutput::TooManyFailures { info }) => {
            assert!(info.subtree_failed);
            // How often it lists each: see
            // reduce_too_many_failures_counts_each_failed_rank_once.
            let mut listed = info.ranks().to_vec();
            listed.sort_unstable();
            listed.dedup();
            assert_eq!(listed, [2, 4, 5]);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.core().awaiting(), None);
}

// Fixed bug: the root's failure information counted a failed rank more
// than once. Section 4.4 builds the list by concatenation
// and says "items in lists that are concatenated always come from disjoint
// sets", so that the count scheme can track the list's size alone; the
// crate's own docs say the count scheme lets the root learn how many
// failed. Within a subtree that holds: a failed rank is noted by its parent
// (its own subtree) and by its group peers (one in each other subtree).
// The root breaks it: it merges its own notes into the chosen subtree's,
// and those notes are already there:
// * a failed child of the root is in group 0 = {1, .., f + 1}, the root's
//   children; the chosen child is its group peer and noted it too;
// * a failed member of the root's group was noted by that group's member
//   in the chosen subtree, when the subtree holds one (k < a), the same
//   case in which the root does not add its own value;
// * with one group (P <= f + 1) the root's group peers are also its tree
//   children, and a failed one is noted as both;
// * TooManyFailures merges every subtree's notes, each of which lists the
//   same failed group members.
// A fix that follows the value: the root adds its own notes of group
// peers only when it adds its own value, and its notes of failed children
// never (for TooManyFailures, a list can be deduplicated; a count cannot).

fn rplan_with(procs: u32, f: u32, scheme: FailureScheme) -> ReducePlan {
    ReducePlan::new(BINOMIAL, procs, f, scheme, LogP::PAPER).unwrap()
}

fn failures_in(scheme: FailureScheme, noted: &[(Rank, bool)]) -> FailureInfo {
    let mut info = FailureInfo::default();
    for &(r, in_tree) in noted {
        info.note_failed(r, in_tree, scheme);
    }
    info
}

/// Calls `test(scheme, root)` for each failure scheme with the core of the
/// root of `procs` ranks, fault budget `f`.
fn for_both_schemes(
    procs: u32,
    f: u32,
    mut test: impl FnMut(FailureScheme, &mut Script<Reduce<'_, u64, Add>>),
) {
    for scheme in [FailureScheme::List, FailureScheme::Count] {
        let plan = rplan_with(procs, f, scheme);
        test(scheme, &mut rcore(&plan, 0));
    }
}

/// The root's information, checked: one failure of `rank`.
fn once(out: Option<ReduceOutput<u64>>, scheme: FailureScheme, rank: Rank, value: u64) {
    match out {
        Some(ReduceOutput::Root { value: v, info, .. }) => {
            assert_eq!(v, value);
            assert_eq!(info.count, 1, "{scheme}: one rank failed");
            if scheme == FailureScheme::List {
                assert_eq!(info.ranks(), [rank], "{scheme}");
            }
        }
        other => panic!("{other:?}"),
    }
}

/// Regression (see the note above). The paper's Figure 2: P = 7, f = 1, rank 1
/// dead. The root finds its child 1 failed; 2, 1's group peer, reports it
/// too. One rank failed; the root says two.
#[test]
fn reduce_root_counts_a_failed_root_child_once() {
    for_both_schemes(7, 1, |scheme, s| {
        s.fail(1, 1);
        let below = failures_in(scheme, &[(1, false)]);
        s.deliver(2, 2, partial(sum([2, 3, 4, 5, 6]), below));
        once(s.output(), scheme, 1, sum([0, 2, 3, 4, 5, 6]));
    });
}

/// Regression (see the note above). P = 9, f = 2: the root's group is {7, 8,
/// root}, 7 is dead. The root notes its peer 7; so does 8, in subtree 2 =
/// {2, 5, 8}, which holds a member of the root's group: the root takes its
/// result as it is (8's value includes the root's input) and merges its
/// own notes: 7 twice.
#[test]
fn reduce_root_counts_a_failed_group_peer_once() {
    for_both_schemes(9, 2, |scheme, s| {
        assert_eq!(dests(&s.sends(0)), up_corrections(&[7, 8]));
        s.fail(1, 7);
        // Subtree 1 = {1, 4, 7}: 7's parent 4 finds it failed.
        s.deliver(2, 1, partial(sum(1..7), failures_in(scheme, &[(7, true)])));
        // Subtree 2: 8 up-corrected with the root and without 7.
        let without_7 = sum(0..9) - input(7);
        s.deliver(3, 2, partial(without_7, failures_in(scheme, &[(7, false)])));
        once(s.output(), scheme, 7, without_7);
    });
}

/// Regression (see the note above). P = 3, f = 2: one group holds the team; the
/// root's group peers are its tree children too, and it notes a failed one
/// as both.
#[test]
fn reduce_root_of_one_group_counts_a_failed_rank_once() {
    for_both_schemes(3, 2, |scheme, s| {
        assert_eq!(dests(&s.sends(0)), up_corrections(&[1, 2]));
        s.fail(1, 1);
        s.deliver(2, 2, up(input(2)));
        once(s.output(), scheme, 1, sum([0, 2]));
    });
}

/// Regression (see the note above). P = 7, f = 1, ranks 2, 4 and 5 dead: three
/// failures; the root's TooManyFailures counts four (2 as its failed child
/// and as the failed peer 1 reports).
#[test]
fn reduce_too_many_failures_counts_each_failed_rank_once() {
    let plan = rplan_with(7, 1, FailureScheme::Count);
    let mut s = rcore(&plan, 0);
    let below = failures_in(FailureScheme::Count, &[(2, false), (4, false), (5, true)]);
    s.deliver(1, 1, partial(sum([1, 3]), below));
    s.fail(2, 2);
    match s.output() {
        Some(ReduceOutput::TooManyFailures { info }) => assert_eq!(info.count, 3),
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Allreduce: root retry (Section 5, protocol/allreduce/).
// ---------------------------------------------------------------------------

/// P = 5, f = 1. Round k uses root k, ranks relabelled so the root is
/// virtual 0: groups {1, 2}, {3, 4}, the root in none; the I(f)-tree has
/// 0 -> 1, 2; 1 -> 3; 2 -> 4. Rank 3 is virtual 3 in round 0 (peer 4,
/// parent 1, no child), virtual 2 in round 1 (peer rank 2, parent rank 1,
/// child virtual 4 = rank 0) and virtual 1 in round 2 (peer rank 4, parent
/// rank 2, child virtual 3 = rank 0).
fn aplan() -> AllreducePlan {
    AllreducePlan::new(rplan(5, 1), bplan(BINOMIAL, 5, Correction::Checked, 0)).unwrap()
}

fn acore(plan: &AllreducePlan, me: Rank) -> Script<Allreduce<'_, u64, Add>> {
    Script::new(Allreduce::new(plan, me, 0, Collective::Allreduce, input(me), add as Add).unwrap())
}

fn aup(root: Rank, c: Contribution<u64>) -> Msg<Contribution<u64>> {
    rmsg(root, Collective::Allreduce, Tag::UpCorrection, c)
}

/// What was sent: role, destination, round (root), value, decided.
fn asends(sends: &[Transmit<Msg<Contribution<u64>>>]) -> Vec<(Tag, Rank, Rank, u64, bool)> {
    sends
        .iter()
        .map(|t| {
            (
                t.msg.tag,
                t.to,
                t.msg.root,
                t.msg.payload.value,
                t.msg.payload.decided,
            )
        })
        .collect()
}

/// Root `root` reported failed to rank 3 at `now`: it moves to the next
/// round and, its group complete and its tree child known failed, sends
/// its input to its group `peer` and at once `value` up to its `parent`,
/// its subtree incomplete. Returns those sends.
fn next_round(
    s: &mut Script<Allreduce<'_, u64, Add>>,
    now: Tick,
    root: Rank,
    peer: Rank,
    parent: Rank,
    value: u64,
) -> Vec<Transmit<Msg<Contribution<u64>>>> {
    s.fail(now, root);
    let round = root + 1;
    assert_eq!(s.core().root(), round);
    let sends = s.sends(now);
    assert_eq!(
        asends(&sends),
        [
            (Tag::UpCorrection, peer, round, input(3), false),
            (Tag::Upward, parent, round, value, false),
        ]
    );
    assert!(sends[1].msg.payload.info.subtree_failed);
    sends
}

/// An undecided rank: round 0 until root 0 is reported failed, then round
/// 1 (messages carry root 1), then round 2 when root 1 fails too. A
/// message of a later round waits until the rank gets there, and is then
/// applied; a message of an abandoned round is dropped.
#[test]
fn allreduce_retry_holds_later_rounds_and_drops_abandoned_ones() {
    let plan = aplan();
    let mut s = acore(&plan, 3);
    s.start(0);
    assert_eq!(
        asends(&s.sends(0)),
        [(Tag::UpCorrection, 4, 0, input(3), false)]
    );
    assert_eq!(s.core().awaiting(), Some(4));
    // Rank 2, already in round 1, and rank 4, already in round 2.
    s.deliver(1, 2, aup(1, Contribution::input(input(2))));
    s.deliver(1, 4, aup(2, Contribution::input(input(4))));
    assert_eq!(s.sends(1), [], "held");
    assert_eq!((s.core().root(), s.core().awaiting()), (0, Some(4)));

    // Root 0 fails: round 1. Rank 2's held message completes the group, and
    // the child (rank 0) is known failed: up at once, subtree incomplete.
    let sends = next_round(&mut s, 2, 0, 2, 1, sum([2, 3]));
    assert_eq!(sends[1].msg.payload.info.ranks(), [0]);

    // Round 0's message from rank 4 comes late: dropped.
    s.deliver(3, 4, aup(0, Contribution::input(input(4))));
    assert_eq!(s.sends(3), []);

    // Root 1 fails: round 2, where rank 4's held message is applied.
    next_round(&mut s, 4, 1, 4, 2, sum([3, 4]));
    assert_eq!(s.output(), None);

    // Root 2's broadcast brings the result (rank 3 is virtual 1, child of 0)
    // and the list of the inputs it lacks, which the rank delivers with it.
    let lacks = FailureInfo::from_parts(false, 2, &[0, 1]);
    let result = Contribution {
        info: lacks,
        ..Contribution::input(sum([2, 3, 4]))
    };
    s.deliver(5, 2, rmsg(2, Collective::Allreduce, Tag::Tree, result));
    assert_eq!(
        s.output(),
        Some(AllreduceOutput::Value {
            value: sum([2, 3, 4]),
            root: 2,
            missing: lacks,
        })
    );
}

/// A rank that has the result of round 0 when root 0 is reported failed
/// moves to round 1 too, and contributes the result it delivered, marked
/// decided: it absorbs every other value (its peer's input is not added),
/// so the next root broadcasts the same result. It delivers only once.
#[test]
fn allreduce_decided_rank_recontributes_its_result() {
    let plan = aplan();
    let mut s = acore(&plan, 3);
    s.start(0);
    s.sends(0);
    s.deliver(1, 4, aup(0, Contribution::input(input(4))));
    assert_eq!(
        asends(&s.sends(1)),
        [(Tag::Upward, 1, 0, sum([3, 4]), false)]
    );
    // Root 0's broadcast (binomial: rank 3's parent is 1), with an empty
    // list: the result lacks no input.
    let result = sum(0..5);
    s.deliver(
        2,
        1,
        rmsg(
            0,
            Collective::Allreduce,
            Tag::Tree,
            Contribution::input(result),
        ),
    );
    assert_eq!(
        s.output(),
        Some(AllreduceOutput::Value {
            value: result,
            root: 0,
            missing: FailureInfo::default(),
        })
    );
    for tx in s.sends(2) {
        assert!(tx.msg.tag.is_correction() && tx.msg.root == 0);
    }

    s.fail(3, 0);
    assert_eq!(s.core().root(), 1);
    assert_eq!(s.core().result(), Some(result));
    assert_eq!(
        asends(&s.sends(3)),
        [(Tag::UpCorrection, 2, 1, result, true)]
    );
    assert_eq!(s.core().awaiting(), None, "decided: nothing to suspect");
    s.deliver(4, 2, aup(1, Contribution::input(input(2))));
    let sends = s.sends(4);
    assert_eq!(asends(&sends), [(Tag::Upward, 1, 1, result, true)]);
    let info = sends[0].msg.payload.info;
    assert!(info.subtree_failed, "child rank 0 failed");
    // The decided value carries its own list (empty: round 0's result held
    // every input, rank 0's included), not this round's notes of rank 0.
    assert_eq!((info.count, info.ranks()), (0, &[][..]));

    // Root 1 broadcasts the same result; rank 3 relays, delivers nothing new.
    let again = Contribution {
        decided: true,
        ..Contribution::input(result)
    };
    s.deliver(5, 1, rmsg(1, Collective::Allreduce, Tag::Tree, again));
    assert_eq!(s.output(), None);
}

// ---------------------------------------------------------------------------
// Regressions.
// ---------------------------------------------------------------------------

/// Bug 1: an allreduce handed its inner cores `now = 0` for the messages it
/// routed and the rounds it entered, so time ran backwards for them
/// (harmless to untimed cores, fatal to a timed one). Every inner core now
/// sees the latest time the allreduce was handed.
#[test]
fn allreduce_hands_its_inner_cores_the_time_it_was_handed() {
    let plan = aplan();
    let mut s = acore(&plan, 3);
    s.start(100);
    assert_eq!(s.core().reduce_phase().now(), 100);
    s.sends(100);
    // A message routed to the reduce phase at 250.
    s.deliver(250, 4, aup(0, Contribution::input(input(4))));
    assert_eq!(s.core().reduce_phase().now(), 250, "a routed message");
    // Root 0 fails at 400: round 1's fresh reduce core starts at 400, not 0.
    s.fail(400, 0);
    assert_eq!(s.core().root(), 1);
    assert_eq!(s.core().reduce_phase().now(), 400, "a new round");
    s.sends(400);
    assert_eq!(s.core().reduce_phase().now(), 400);
}

/// Bug 2: `Bcast::new` named the virtual rank (always 0) in `NoRootValue`;
/// it names the root.
#[test]
fn a_root_without_a_value_is_named_by_its_rank() {
    let plan = bplan(BINOMIAL, 8, Correction::Checked, 0);
    for root in [0, 3, 7] {
        let err = Bcast::<u64>::new(&plan, root, root, 0, None).unwrap_err();
        assert_eq!(err, corrected::Error::NoRootValue(root));
    }
    assert!(
        Bcast::<u64>::new(&plan, 3, 5, 0, None).is_ok(),
        "a non-root passes none"
    );
}
